//! The conformance harness: delivery schedules and the oracle that judges
//! them.
//!
//! The oracle is the definition of "effectively once": after any schedule
//! (duplicates, parallel workers, failures then redelivery, restarts), a
//! consumer's state must equal the state reached by applying each distinct
//! message exactly once to a fresh database, and the inbox must hold one
//! row per distinct message. A scenario returns `Err(Violation)` describing
//! what differed; tests assert on it, and the teeth tests assert that
//! known-broken implementations produce one.
//!
//! To test a new handler, implement [`Subject`] for it (a few lines: seed,
//! messages, state) and call the scenarios; see `tests/conformance/`.

use std::collections::HashSet;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier, Mutex};

use rusqlite::Connection;

use {{crate_name}}::database::{Database, Settings};
use {{crate_name}}::handler::{Handler, HandlerError};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome};
use {{crate_name}}::message::Message;
use {{crate_name}}::pipeline::Summary;

/// A handler under test, with what the harness needs to judge it.
pub trait Subject: Sync {
    /// The part of the database the handler owns, read back for comparison.
    type State: PartialEq + Debug;

    fn handler(&self) -> Arc<dyn Handler>;
    /// Business state every scenario starts from (e.g. an account with 1,000).
    fn seed(&self, db: &Connection);
    /// `count` distinct messages the handler subscribes to.
    fn messages(&self, count: usize) -> Vec<Message>;
    /// Reads the handler's state.
    fn state(&self, db: &Connection) -> Self::State;
}

/// An inbox implementation under test: the real one, or a broken one.
pub trait InboxUnderTest: Sync {
    fn name(&self) -> String;
    /// Creates the database with its schema (the inbox's and the handlers').
    fn create(&self, path: &Path, handlers: &[Arc<dyn Handler>]);
    /// A new connection for one worker.
    fn open(&self, path: &Path) -> Box<dyn Inbox>;
}

/// The inbox this crate ships, delivering `batch_size` messages per
/// transaction.
pub struct RealInbox {
    pub batch_size: usize,
}

impl RealInbox {
    pub const ONE_PER_TRANSACTION: Self = Self { batch_size: 1 };
    pub const BATCHED: Self = Self { batch_size: 16 };

}

impl InboxUnderTest for RealInbox {
    fn name(&self) -> String {
        format!("real inbox, batches of {}", self.batch_size)
    }

    fn create(&self, path: &Path, handlers: &[Arc<dyn Handler>]) {
        Database::open(path, Settings::default(), handlers).expect("create database");
    }

    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        Box::new(Batching {
            inner: Database::new(path, Settings::default())
                .inbox()
                .expect("open inbox"),
            batch_size: self.batch_size,
        })
    }
}

/// Splits whatever it is given into transactions of `batch_size`.
struct Batching<I> {
    inner: I,
    batch_size: usize,
}

impl<I: Inbox> Inbox for Batching<I> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_>],
    ) -> Result<Vec<Outcome>, {{crate_name}}::inbox::StorageError> {
        let mut outcomes = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(self.batch_size) {
            outcomes.extend(self.inner.deliver_batch(chunk)?);
        }
        Ok(outcomes)
    }
}

/// A fresh database in its own temporary folder.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Fixture {
    pub fn new(inbox: &dyn InboxUnderTest, subjects: &[&dyn SeedOnly]) -> Self {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("consumer.db");
        let handlers: Vec<_> = subjects.iter().map(|s| s.handler_dyn()).collect();
        inbox.create(&path, &handlers);
        let db = Connection::open(&path).expect("open for seeding");
        for subject in subjects {
            subject.seed_dyn(&db);
        }
        Self { _dir: dir, path }
    }

    pub fn connection(&self) -> Connection {
        Connection::open(&self.path).expect("open for reading")
    }

    /// Inbox rows recorded for `consumer`.
    pub fn inbox_rows(&self, consumer: &str) -> usize {
        let rows: i64 = self
            .connection()
            .query_row(
                "SELECT count(*) FROM inbox WHERE consumer = ?1",
                [consumer],
                |row| row.get(0),
            )
            .expect("count inbox rows");
        usize::try_from(rows).expect("a count is never negative")
    }
}

/// Object-safe view of a [`Subject`] for set-up code that does not care
/// about its state type.
pub trait SeedOnly {
    fn handler_dyn(&self) -> Arc<dyn Handler>;
    fn seed_dyn(&self, db: &Connection);
}

impl<S: Subject> SeedOnly for S {
    fn handler_dyn(&self) -> Arc<dyn Handler> {
        self.handler()
    }
    fn seed_dyn(&self, db: &Connection) {
        self.seed(db)
    }
}

/// What a scenario observed.
#[derive(Debug)]
pub struct Observed<State> {
    pub outcomes: Summary,
    pub inbox_rows: usize,
    pub state: State,
}

/// A broken promise, with enough detail to see why.
#[derive(Debug)]
pub struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The oracle's answer: the state after applying each message exactly once,
/// straight through the handler, in a fresh database.
pub fn once_only_state<S: Subject>(subject: &S, messages: &[Message]) -> Result<S::State, Violation> {
    let fixture = Fixture::new(&RealInbox::ONE_PER_TRANSACTION, &[subject]);
    let mut db = fixture.connection();
    let handler = subject.handler();
    let mut seen = HashSet::new();
    for message in messages.iter().filter(|m| seen.insert(m.id.clone())) {
        let tx = db.transaction().expect("begin");
        handler.apply(&tx, message).map_err(|error| {
            Violation(format!(
                "`{}` fails even when each message is applied once to a fresh database: {error}",
                handler.consumer()
            ))
        })?;
        tx.commit().expect("commit");
    }
    Ok(subject.state(&db))
}

/// Checks an observation against the oracle: state equal to once-only,
/// one inbox row per distinct message, no failures, every extra delivery a
/// duplicate.
pub fn judge<S: Subject>(
    scenario: &str,
    subject: &S,
    messages: &[Message],
    deliveries: u64,
    observed: Observed<S::State>,
) -> Result<Observed<S::State>, Violation> {
    let distinct = messages.iter().map(|m| &m.id).collect::<HashSet<_>>().len();
    let expected_state = once_only_state(subject, messages)?;
    let expected_outcomes = Summary {
        applied: distinct as u64,
        duplicate: deliveries - distinct as u64,
        failed: 0,
        rejected: 0,
    };
    let mut problems = Vec::new();
    if observed.state != expected_state {
        problems.push(format!(
            "state is {:?}, once-only gives {:?}",
            observed.state, expected_state
        ));
    }
    if observed.inbox_rows != distinct {
        problems.push(format!(
            "inbox holds {} rows for {} distinct messages",
            observed.inbox_rows, distinct
        ));
    }
    if observed.outcomes != expected_outcomes {
        problems.push(format!(
            "outcomes {}, expected {}",
            observed.outcomes, expected_outcomes
        ));
    }
    if problems.is_empty() {
        Ok(observed)
    } else {
        Err(Violation(format!(
            "{scenario} [{}]: {}",
            subject.handler().consumer(),
            problems.join("; ")
        )))
    }
}

/// Delivers `messages` in order through one connection and counts outcomes.
pub fn deliver_all(inbox: &mut dyn Inbox, handler: &dyn Handler, messages: &[Message]) -> Summary {
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery { handler, message })
        .collect();
    let mut summary = Summary::default();
    match inbox.deliver_batch(&deliveries) {
        Ok(outcomes) => outcomes.iter().for_each(|o| summary.count(o)),
        Err(error) => {
            eprintln!("storage error: {error}");
            summary.failed += deliveries.len() as u64;
        }
    }
    summary
}

/// **Run twice**: one worker delivers every message, then all of them again.
pub fn run_twice<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Result<Observed<S::State>, Violation> {
    let fixture = Fixture::new(inbox, &[subject]);
    let handler = subject.handler();
    let messages = subject.messages(count);
    let mut worker = inbox.open(&fixture.path);
    let mut outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    outcomes += deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    let observed = observe(&fixture, subject, outcomes);
    judge(
        &format!("run twice via {}", inbox.name()),
        subject,
        &messages,
        2 * count as u64,
        observed,
    )
}

/// **Parallel**: `workers` threads, each on its own connection, released
/// together by a barrier, each deliver the same messages in the same order.
/// Same order and a common start maximise the chance that two workers
/// handle the same message at the same moment, which is what exposes
/// check-then-act.
pub fn parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    workers: usize,
    count: usize,
) -> Result<Observed<S::State>, Violation> {
    let fixture = Fixture::new(inbox, &[subject]);
    let handler = subject.handler();
    let messages = subject.messages(count);
    let barrier = Barrier::new(workers);
    let outcomes = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                let mut worker = inbox.open(&fixture.path);
                let (barrier, handler, messages) = (&barrier, handler.as_ref(), &messages);
                scope.spawn(move || {
                    barrier.wait();
                    deliver_all(worker.as_mut(), handler, messages)
                })
            })
            .collect();
        threads.into_iter().fold(Summary::default(), |mut total, thread| {
            total += thread.join().expect("worker thread");
            total
        })
    });
    let observed = observe(&fixture, subject, outcomes);
    judge(
        &format!("parallel {workers}x{count} via {}", inbox.name()),
        subject,
        &messages,
        (workers * count) as u64,
        observed,
    )
}

/// **Failure then redelivery**: the first attempt at every message in
/// `failing` fails inside the business update (after the handler has done
/// its writes). Nothing of those attempts may remain, not even the inbox
/// row; the other messages apply normally. Then everything is redelivered
/// and must apply exactly once.
///
/// Returns the observations after the failures and after the redelivery.
pub fn redeliver_after_failure<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
    failing: impl Fn(usize) -> bool,
) -> Result<Redelivered<S::State>, Violation> {
    let fixture = Fixture::new(inbox, &[subject]);
    let messages = subject.messages(count);
    let fail_ids = messages
        .iter()
        .enumerate()
        .filter(|(index, _)| failing(*index))
        .map(|(_, m)| m.id.as_str().to_owned())
        .collect::<HashSet<_>>();
    let failing_handler = FailFirstAttempt::new(subject.handler(), fail_ids.clone());
    let mut worker = inbox.open(&fixture.path);

    let first = deliver_all(worker.as_mut(), &failing_handler, &messages);
    let succeeded: Vec<_> = messages
        .iter()
        .filter(|m| !fail_ids.contains(m.id.as_str()))
        .cloned()
        .collect();
    let after_failure = observe(&fixture, subject, first);
    let scenario = format!("failure then redelivery via {}", inbox.name());
    let expected_failed = fail_ids.len() as u64;
    if after_failure.outcomes.failed != expected_failed
        || after_failure.inbox_rows != succeeded.len()
        || after_failure.state != once_only_state(subject, &succeeded)?
    {
        return Err(Violation(format!(
            "{scenario} [{}]: after {expected_failed} injected failures: outcomes {}, {} inbox rows, state {:?}; \
             expected {expected_failed} failed, {} rows and the state of only the other messages",
            subject.handler().consumer(),
            after_failure.outcomes,
            after_failure.inbox_rows,
            after_failure.state,
            succeeded.len(),
        )));
    }

    let second = deliver_all(worker.as_mut(), &failing_handler, &messages);
    let mut total = first;
    total += second;
    total.failed -= expected_failed;
    let after_redelivery = observe(&fixture, subject, total);
    // Every message was delivered twice; the injected failures are already
    // accounted for above.
    let deliveries = 2 * count as u64 - expected_failed;
    let after_redelivery = judge(&scenario, subject, &messages, deliveries, after_redelivery)?;
    Ok(Redelivered {
        after_failure,
        after_redelivery,
    })
}

/// What [`redeliver_after_failure`] saw at each of its two steps.
#[derive(Debug)]
pub struct Redelivered<State> {
    pub after_failure: Observed<State>,
    pub after_redelivery: Observed<State>,
}

/// **Restart**: deliver everything, close every connection, reopen the
/// database with a new inbox value, and deliver everything again: all of the
/// second round must be duplicates.
pub fn restart<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Result<Observed<S::State>, Violation> {
    let fixture = Fixture::new(inbox, &[subject]);
    let handler = subject.handler();
    let messages = subject.messages(count);
    let mut outcomes = {
        let mut before = inbox.open(&fixture.path);
        deliver_all(before.as_mut(), handler.as_ref(), &messages)
    };
    let mut after = inbox.open(&fixture.path);
    outcomes += deliver_all(after.as_mut(), handler.as_ref(), &messages);
    let observed = observe(&fixture, subject, outcomes);
    judge(
        &format!("restart via {}", inbox.name()),
        subject,
        &messages,
        2 * count as u64,
        observed,
    )
}

/// **Both consumers**: the same messages (same ids) go to two consumers,
/// twice each. Each consumer must apply every message once: the inbox key
/// is (consumer, message id), not the message id alone.
pub fn both_consumers<A: Subject, B: Subject>(
    first: &A,
    second: &B,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Result<BothObserved<A::State, B::State>, Violation> {
    let fixture = Fixture::new(inbox, &[first, second]);
    let messages = first.messages(count);
    let (handler_a, handler_b) = (first.handler(), second.handler());
    let mut worker = inbox.open(&fixture.path);
    let mut outcomes_a = Summary::default();
    let mut outcomes_b = Summary::default();
    for _ in 0..2 {
        outcomes_a += deliver_all(worker.as_mut(), handler_a.as_ref(), &messages);
        outcomes_b += deliver_all(worker.as_mut(), handler_b.as_ref(), &messages);
    }
    let scenario = format!("both consumers via {}", inbox.name());
    let deliveries = 2 * count as u64;
    let observed_a = judge(&scenario, first, &messages, deliveries, observe(&fixture, first, outcomes_a))?;
    let observed_b = judge(&scenario, second, &messages, deliveries, observe(&fixture, second, outcomes_b))?;
    Ok(BothObserved {
        first: observed_a,
        second: observed_b,
    })
}

/// What [`both_consumers`] saw, per consumer.
#[derive(Debug)]
pub struct BothObserved<A, B> {
    pub first: Observed<A>,
    pub second: Observed<B>,
}

fn observe<S: Subject>(fixture: &Fixture, subject: &S, outcomes: Summary) -> Observed<S::State> {
    Observed {
        outcomes,
        inbox_rows: fixture.inbox_rows(subject.handler().consumer()),
        state: subject.state(&fixture.connection()),
    }
}

/// Wraps a handler so that the first attempt at each chosen message fails
/// *after* the real handler has done its writes: the harshest moment, since
/// a correct inbox must now roll back both the writes and its own record.
pub struct FailFirstAttempt {
    inner: Arc<dyn Handler>,
    not_yet_failed: Mutex<HashSet<String>>,
}

impl FailFirstAttempt {
    pub fn new(inner: Arc<dyn Handler>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            not_yet_failed: Mutex::new(ids),
        }
    }
}

impl Handler for FailFirstAttempt {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }
    fn subscribes_to(&self, event: &{{crate_name}}::event::Event) -> bool {
        self.inner.subscribes_to(event)
    }
    fn schema(&self) -> &'static str {
        self.inner.schema()
    }
    fn apply(&self, db: &Connection, message: &Message) -> Result<(), HandlerError> {
        self.inner.apply(db, message)?;
        if self.not_yet_failed.lock().unwrap().remove(message.id.as_str()) {
            return Err(format!("injected failure after the business update of {}", message.id).into());
        }
        Ok(())
    }
}

/// Every scenario against one inbox, with both example consumers; returns
/// what each violated. The real inbox must come back clean and each broken
/// one must not.
pub fn suite(inbox: &dyn InboxUnderTest) -> Vec<Violation> {
    use super::subjects::{DebitSubject, NotifySubject};
    let notify = NotifySubject::real();
    let results = [
        run_twice(&DebitSubject, inbox, 50).err(),
        parallel(&DebitSubject, inbox, 4, 50).err(),
        redeliver_after_failure(&DebitSubject, inbox, 50, |_| true).err(),
        restart(&DebitSubject, inbox, 50).err(),
        both_consumers(&DebitSubject, &notify, inbox, 50).err(),
        run_twice(&notify, inbox, 50).err(),
    ];
    results.into_iter().flatten().collect()
}
