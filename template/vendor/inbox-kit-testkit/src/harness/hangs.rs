//! A hang is a failure.
//!
//! A consumer that blocks (a claim waiting for a lock its own delivery's
//! transaction holds, a worker waiting for a signal that never comes)
//! never finishes a delivery, and a test that waits for it waits forever:
//! the Stop hook and CI would hear nothing but silence until their own
//! time ran out. So every wait the harness makes on the consumer is
//! registered here while it lasts ([`waiting`]), under the test and the
//! scenario it belongs to ([`scenario`]). A watchdog thread looks at them
//! four times a second. When one has lasted longer than [`limit`]
//! (`INBOX_TEST_HANG_SECONDS`, 30 by default: a delivery takes
//! milliseconds, so only a blocked one ever comes near it, however loaded
//! the machine), it prints which test and scenario hung, what each wait
//! in flight was for and for how long (and what the database knows, from
//! what the project's harness registered with [`describe_the_database_with`]:
//! on PostgreSQL, which session holds the lock another waits for), then
//! ends the test process with a failure.
//!
//! Ending the process is the only way out: a blocked thread cannot be
//! unwound from outside, and a scenario's scoped workers hold the scenario
//! until the last of them returns. The report goes straight to stdout and
//! stderr, past libtest's capture, as `test NAME ... HUNG` and a section
//! between `---- NAME hung ----` and `---- end of hang report ----`, which
//! a project's `scripts/stop-hook.sh` reads like any failed test.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use super::env::env_number;

/// How often the watchdog looks.
const LOOK: Duration = Duration::from_millis(250);

/// What the database can say about who waits for whom, for a hang report:
/// registered by the project's database fixture, once per process; the
/// first registration counts.
static DATABASE: OnceLock<fn() -> Vec<String>> = OnceLock::new();

/// Has every hang report add `describe()`'s lines (say, which session holds
/// the lock a delivery waits for). Without it a report lists the waits in
/// flight alone, which is all a database without lock introspection (one
/// SQLite file) can show.
pub fn describe_the_database_with(describe: fn() -> Vec<String>) {
    let _ = DATABASE.set(describe);
}

/// The longest any one wait may last before it counts as a hang:
/// `INBOX_TEST_HANG_SECONDS`, default 30.
pub fn limit() -> Duration {
    static LIMIT: OnceLock<Duration> = OnceLock::new();
    *LIMIT.get_or_init(|| Duration::from_secs(env_number("INBOX_TEST_HANG_SECONDS", 30).max(1)))
}

/// Which test, and which scenario of it, a thread is working for.
#[derive(Clone, Debug)]
pub struct Context {
    test: Arc<str>,
    scenario: Arc<str>,
}

thread_local! {
    static CONTEXT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// The scenario this thread works for until the guard is dropped (the
/// previous one, if any, comes back then).
#[must_use = "the scenario lasts as long as this guard"]
pub struct InScenario {
    previous: Option<Context>,
}

impl Drop for InScenario {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CONTEXT.with(|context| *context.borrow_mut() = previous);
    }
}

/// Declares that this thread now plays `name` (say `run twice via
/// check-then-act, for debit`).
pub fn scenario(name: impl Into<String>) -> InScenario {
    let test = context().map_or_else(test_of_this_thread, |outer| outer.test);
    enter(Some(Context {
        test,
        scenario: name.into().into(),
    }))
}

/// What this thread works for, to hand to the threads it starts.
pub fn context() -> Option<Context> {
    CONTEXT.with(|context| context.borrow().clone())
}

/// Makes this thread (one a scenario started) work for `context`.
pub fn enter(context: Option<Context>) -> InScenario {
    let previous = CONTEXT.with(|current| std::mem::replace(&mut *current.borrow_mut(), context));
    InScenario { previous }
}

/// libtest runs each test on a thread named after it.
fn test_of_this_thread() -> Arc<str> {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.into(),
        _ => "this test".into(),
    }
}

/// One wait in flight.
struct Wait {
    context: Option<Context>,
    what: String,
    since: Instant,
    /// How long it may last: [`limit`], or more for a wait on another
    /// process, which has a watchdog of its own and so reports its own
    /// hang (with what it waited for) first.
    limit: Duration,
}

static WAITS: Mutex<BTreeMap<u64, Wait>> = Mutex::new(BTreeMap::new());
static SERIALS: AtomicU64 = AtomicU64::new(0);

/// A wait registered with the watchdog, over when dropped.
#[must_use = "the wait is watched as long as this guard lives"]
pub struct Waiting(u64);

impl Drop for Waiting {
    fn drop(&mut self) {
        waits().remove(&self.0);
    }
}

/// Registers a wait on the consumer (`what`: "worker 2 of 4 delivering
/// m-00001 to `debit`") until the guard is dropped.
pub fn waiting(what: impl Into<String>) -> Waiting {
    register(what.into(), limit())
}

/// Registers a wait on another process of the scenario, which runs the
/// harness too: it gets twice the limit, so that a hang inside that
/// process is reported there, with what it waited for.
pub fn waiting_for_process(what: impl Into<String>) -> Waiting {
    register(what.into(), 2 * limit())
}

fn register(what: String, limit: Duration) -> Waiting {
    static WATCHDOG: Once = Once::new();
    WATCHDOG.call_once(|| {
        std::thread::Builder::new()
            .name("hang watchdog".into())
            .spawn(watch)
            .expect("start the hang watchdog");
    });
    let serial = SERIALS.fetch_add(1, Ordering::Relaxed);
    waits().insert(
        serial,
        Wait {
            context: context(),
            what,
            since: Instant::now(),
            limit,
        },
    );
    Waiting(serial)
}

fn waits() -> std::sync::MutexGuard<'static, BTreeMap<u64, Wait>> {
    WAITS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn watch() {
    loop {
        std::thread::sleep(LOOK);
        if let Some(report) = hang_report(&waits()) {
            hang(&report);
        }
    }
}

/// What hung, if a wait has lasted longer than its limit: the test's
/// name and the report about it.
fn hang_report(waits: &BTreeMap<u64, Wait>) -> Option<(String, String)> {
    let oldest = waits
        .values()
        .filter(|wait| wait.since.elapsed() > wait.limit)
        .max_by_key(|wait| wait.since.elapsed())?;
    let (test, scenario) = match &oldest.context {
        Some(context) => (context.test.to_string(), context.scenario.to_string()),
        None => ("this test".to_owned(), "a scenario".to_owned()),
    };
    let mut report = format!(
        "A hang counts as a failure: the consumer blocked and never finished a delivery \
         (a claim waiting for a lock its own transaction holds? a worker waiting for a \
         signal that never comes?).\n\
         Scenario: {scenario}\n\
         Waited {:.1} s (the limit is {} s: INBOX_TEST_HANG_SECONDS) for: {}\n\
         Every wait in flight:\n",
        oldest.since.elapsed().as_secs_f64(),
        oldest.limit.as_secs(),
        oldest.what,
    );
    let mut in_flight: Vec<&Wait> = waits.values().collect();
    in_flight.sort_by_key(|wait| wait.since);
    for wait in in_flight.iter().take(20) {
        let place = wait.context.as_ref().map_or_else(String::new, |context| {
            format!(" (test {}; scenario: {})", context.test, context.scenario)
        });
        report.push_str(&format!(
            "  - {}, for {:.1} s{place}\n",
            wait.what,
            wait.since.elapsed().as_secs_f64()
        ));
    }
    let database = DATABASE.get().map_or_else(Vec::new, |describe| describe());
    if !database.is_empty() {
        report.push_str("The database:\n");
        for line in database {
            report.push_str(&format!("  - {line}\n"));
        }
    }
    Some((test, report))
}

/// Writes the report where nothing captures it and ends the process.
fn hang((test, report): &(String, String)) -> ! {
    let text = format!(
        "\ntest {test} ... HUNG\n---- {test} hung ----\n{report}---- end of hang report ----\n"
    );
    let _ = std::io::stdout().write_all(text.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(text.as_bytes());
    std::process::exit(101);
}

/// What a test run alone in a process of its own did (see [`run_alone`]).
pub struct RunAlone {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub seconds: f64,
}

/// Runs the test `name` of this test binary (an ignored one, that hangs
/// on purpose) in a process of its own, with a hang limit of `limit_secs`.
pub fn run_alone(name: &str, limit_secs: u64) -> RunAlone {
    let started = Instant::now();
    let _waiting = waiting_for_process(format!("the test {name}, run alone"));
    let output = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("INBOX_TEST_HANG_SECONDS", limit_secs.to_string())
        .output()
        .expect("run the test alone");
    RunAlone {
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        seconds: started.elapsed().as_secs_f64(),
    }
}

impl RunAlone {
    /// Fails unless the run failed as a hang, within twenty seconds of its
    /// limit, naming the test, `scenario`, and a wait that starts with
    /// `waited_for`.
    #[track_caller]
    pub fn assert_hung(&self, name: &str, limit_secs: u64, scenario: &str, waited_for: &str) {
        let out = &self.stdout;
        assert!(!self.status.success(), "the hanging test passed:\n{out}");
        assert!(
            self.seconds < (limit_secs + 20) as f64,
            "the hang took {:.1} s to fail, with a limit of {limit_secs} s:\n{out}",
            self.seconds
        );
        assert!(
            out.contains(&format!("test {name} ... HUNG"))
                && out.contains("---- end of hang report ----"),
            "no hang report for {name}:\n{out}"
        );
        assert!(
            out.contains(&format!("Scenario: {scenario}\n"))
                && out.contains(&format!(" for: {waited_for}")),
            "the report does not name the scenario `{scenario}` and what it waited for ({waited_for}...):\n{out}"
        );
    }

    /// Fails unless the report says which session holds the lock the hung
    /// delivery waits for, where the database can tell: `evidence` is what
    /// its description says then (none for a database that cannot tell).
    #[track_caller]
    pub fn assert_lock_holder_named(&self, evidence: Option<&str>) {
        if let Some(evidence) = evidence {
            let out = &self.stdout;
            assert!(
                out.contains(evidence),
                "the report does not say who holds the lock ({evidence}...):\n{out}"
            );
        }
    }
}
