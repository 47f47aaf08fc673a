//! Metrics: what `--metrics-addr` serves counts exactly what the summary
//! line says, while a run goes on and when it ends; exporters that miscount
//! are caught by the same check.

use std::io::{BufRead, BufReader, Cursor, Lines, Write};
use std::process::{ChildStderr, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use indicatif::ProgressBar;

use {{crate_name}}::handlers;
use {{crate_name}}::handlers::Handlers;
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError, StorageFault};
use {{crate_name}}::meter::Meter;
use {{crate_name}}::metrics::Metrics;
use {{crate_name}}::pipeline::{self, Options, PROGRESS_LINE, Summary};
use {{crate_name}}::source::lines::{LinesSource, Rejects};
use {{crate_name}}::stop::Stop;
use {{crate_name}}::store::Store;

use crate::kit::meters::{DuplicatesCountedAsApplied, RollbacksNotCounted};
use crate::kit::metrics::{
    DASHBOARD, DELIVERIES, dashboard_gaps, dashboard_series, disagreement, get, parse_summary,
    scrape, series, served_at,
};
use crate::support::database::Fixture;
use crate::support::kill::Running;
use crate::{consumer, consumer_on, run_consumer};

/// A payment of 10 from account 1 (open) or 9 (missing: it fails, and is
/// dead-lettered on its second attempt with `--max-attempts 2`).
fn payment(id: &str, account: u32) -> String {
    serde_json::json!({
        "id": id,
        "type": "payment.captured",
        "payload": { "account": account, "amount": 10 },
    })
    .to_string()
}

/// The first part of the input: something applied, a duplicate, a failure.
fn first_part() -> Vec<String> {
    vec![payment("p-1", 1), payment("p-1", 1), payment("poison", 9)]
}

/// The rest: the failure again (dead-lettered), new work, more duplicates.
fn second_part() -> Vec<String> {
    vec![
        payment("poison", 9),
        payment("p-2", 1),
        payment("p-1", 1),
        payment("p-2", 1),
    ]
}

/// Reads `stderr` up to the `count`-th progress line; returns the
/// deliveries those lines report.
fn follow_progress(stderr: &mut Lines<BufReader<ChildStderr>>, count: usize) -> u64 {
    let mut deliveries = 0;
    let mut seen = 0;
    while seen < count {
        let line = stderr
            .next()
            .expect("the run ended before its progress")
            .expect("read stderr");
        if let Some(rest) = line.strip_prefix(PROGRESS_LINE) {
            let reported = rest.trim().strip_prefix("deliveries=").expect("a count");
            deliveries += reported.parse::<u64>().expect("a number");
            seen += 1;
        }
    }
    deliveries
}

/// A `run` reading standard input, serving metrics, printing progress.
struct Served {
    /// Killed if the test fails first.
    child: Running,
    stderr: Lines<BufReader<ChildStderr>>,
    /// Where it serves: `127.0.0.1:port`.
    addr: String,
}

/// Starts `command` (the consumer on some database) as a `run` of
/// standard input with `options` that serves metrics on a free port, and
/// reads the port it printed.
fn served(mut command: Command, options: &[&str]) -> Served {
    let mut child = Running::start(
        command
            .args(["run", "--metrics-addr", "127.0.0.1:0", "--progress-lines"])
            .args(options)
            .arg("-")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut stderr = BufReader::new(child.child().stderr.take().expect("stderr")).lines();
    let mut printed = String::new();
    let lines = stderr.by_ref().map_while(Result::ok).inspect(|line| {
        printed.push_str(line);
        printed.push('\n');
    });
    let addr = served_at(lines).unwrap_or_else(|| panic!("no address printed; stderr:\n{printed}"));
    Served {
        child,
        stderr,
        addr,
    }
}

#[test]
fn a_scrape_during_and_after_a_run_counts_what_its_summary_says() {
    let fixture = Fixture::new();
    assert!(
        run_consumer(&fixture, &["open-account", "1", "1000"])
            .status
            .success()
    );
    let Served {
        mut child,
        mut stderr,
        addr,
    } = served(
        consumer(&fixture),
        &["--batch-size", "1", "--max-attempts", "2"],
    );
    let mut stdin = child.child().stdin.take().expect("stdin");
    let started = Instant::now();

    // During: one batch per message, so the progress lines say exactly
    // what has committed when the scrape is taken.
    writeln!(stdin, "{}", first_part().join("\n")).expect("write input");
    let committed = follow_progress(&mut stderr, first_part().len());
    let during = scrape(&addr);
    assert_eq!(get(&addr, "/health/live"), (200, "live\n".to_owned()));
    assert_eq!(get(&addr, "/health/ready"), (200, "ready\n".to_owned()));
    let counted: f64 = series(&during, DELIVERIES).values().sum();
    assert_eq!(counted as u64, committed, "mid-run:\n{during}");

    // After: everything committed, then the input ends and the summary
    // is printed; nothing can change in between.
    writeln!(stdin, "{}", second_part().join("\n")).expect("write input");
    follow_progress(&mut stderr, second_part().len());
    let after = scrape(&addr);
    drop(stdin);
    let output = child.into_child().wait_with_output().expect("the run ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = parse_summary(stdout.lines().last().expect("a summary line"));
    assert!(
        summary.applied > 0
            && summary.duplicate > 0
            && summary.failed > 0
            && summary.dead_lettered > 0,
        "the run was meant to have every outcome: {summary}"
    );
    if let Some(why) = disagreement(&after, &summary) {
        panic!("{why}\n{after}");
    }
    let gaps = dashboard_gaps(DASHBOARD, &after);
    assert!(
        gaps.is_empty(),
        "the dashboard queries series nobody exports: {gaps:?}"
    );
    assert!(
        !during.contains("message_id") && !after.contains("p-1"),
        "a message id in a label:\n{after}"
    );

    // What waits in the database, as `status` counts it.
    let status = run_consumer(&fixture, &["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    let status_count = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in the status:\n{status}"))
    };
    let gauge = |name: &str| -> f64 { series(&after, name).values().sum() };
    assert_eq!(
        gauge("inbox_dead_letters"),
        status_count("dead_letters"),
        "{after}"
    );
    let unsent = gauge("outbox_unsent_notifications");
    assert_eq!(unsent, status_count("notifications"), "{after}");
    assert!(unsent > 0.0, "the run was meant to queue notifications");
    // The oldest was queued after the input began, so it cannot have
    // waited longer than that (plus the millisecond the clock rounds to).
    let age = gauge("outbox_oldest_unsent_age_seconds");
    let bound = started.elapsed().as_secs_f64() + 0.002;
    assert!(
        (0.0..=bound).contains(&age),
        "waited {age} s of at most {bound} s"
    );
}

/// Has the run commit one payment, so that its worker is connected (and
/// has prepared its statements) before a test takes the database away.
fn commit_one(served: &mut Served, database: &[String]) {
    let opened = consumer_on(database)
        .args(["open-account", "1", "1000"])
        .output()
        .expect("open an account");
    assert!(opened.status.success(), "{opened:?}");
    let stdin = served.child.child().stdin.as_mut().expect("stdin");
    writeln!(stdin, "{}", payment("p-0", 1)).expect("write input");
    follow_progress(&mut served.stderr, 1);
}

#[test]
fn readiness_follows_the_database_away_and_back() {
    let fixture = Fixture::new();
    let outage = fixture.outage();
    let mut run = served(consumer_on(outage.args()), &[]);
    commit_one(&mut run, outage.args());
    let addr = run.addr.clone();
    assert_eq!(get(&addr, "/health/ready"), (200, "ready\n".to_owned()));

    outage.begin();
    let (status, reason) = get(&addr, "/health/ready");
    assert_eq!(status, 503, "ready with the database away: {reason}");
    assert!(reason.contains("database unreachable"), "{reason}");
    // Away is not stuck: nothing is in a transaction.
    assert_eq!(get(&addr, "/health/live"), (200, "live\n".to_owned()));

    outage.end();
    assert_eq!(get(&addr, "/health/ready"), (200, "ready\n".to_owned()));
    drop(run.child.child().stdin.take());
    assert!(run.child.child().wait().expect("the run ends").success());
}

#[test]
fn not_ready_before_the_migrations() {
    let fixture = Fixture::new();
    fixture.execute("DROP TABLE attempts");
    let mut run = served(consumer(&fixture), &[]);
    // `run` migrates as it starts, so it is ready.
    commit_one(&mut run, &fixture.cli_args());
    let addr = run.addr.clone();
    assert_eq!(get(&addr, "/health/ready"), (200, "ready\n".to_owned()));
    fixture.execute("DROP TABLE dead_letters");
    assert_eq!(
        get(&addr, "/health/ready"),
        (
            503,
            "migrations not applied: no table dead_letters\n".to_owned()
        )
    );
    drop(run.child.child().stdin.take());
    assert!(run.child.child().wait().expect("the run ends").success());
}

/// Fails its first batch with a storage error, as an outage would.
struct FirstBatchRolledBack<I> {
    inner: I,
    failed: AtomicBool,
}

impl<I: Inbox<Handlers>> Inbox<Handlers> for FirstBatchRolledBack<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        if !self.failed.swap(true, Ordering::SeqCst) {
            return Err(StorageError::new(StorageFault::Other, "a test's outage"));
        }
        self.inner.deliver_batch(batch)
    }
}

/// Runs the whole input in this process, one batch per message, watched
/// by `meter`; the summary.
fn run_watched(meter: Arc<dyn Meter<Handlers>>) -> Summary {
    let fixture = Fixture::new();
    let database = fixture.database();
    database
        .with_tables(|tables| tables.open_account(1, 1000))
        .expect("an account");
    let mut input = first_part();
    input.extend(second_part());
    let source = LinesSource::new(
        Box::new(Cursor::new(input.join("\n").into_bytes())),
        Rejects::to_json_lines(std::io::sink()),
        ProgressBar::hidden(),
    );
    let options = Options {
        workers: 1,
        batch_size: 1,
        meter,
        ..Options::default()
    };
    let policy = {{crate_name}}::inbox::Policy { max_attempts: 2 };
    let open = move || {
        Ok(FirstBatchRolledBack {
            inner: database.inbox(policy)?,
            failed: AtomicBool::new(false),
        })
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let report = runtime
        .block_on(pipeline::run_until(
            Box::new(source),
            handlers::all(),
            open,
            options,
            Arc::new(Stop::default()),
        ))
        .expect("the run");
    report.summary
}

#[test]
fn a_miscounting_exporter_is_caught() {
    let real = Arc::new(Metrics::default());
    let summary = run_watched(real.clone());
    assert!(summary.failed > 0 && summary.duplicate > 0, "{summary}");
    assert_eq!(disagreement(&real.render(), &summary), None);

    let duplicates = Arc::new(DuplicatesCountedAsApplied::default());
    let summary = run_watched(duplicates.clone());
    assert!(
        disagreement(&duplicates.0.render(), &summary).is_some(),
        "duplicates counted as applied went unnoticed"
    );

    let rollbacks = Arc::new(RollbacksNotCounted::default());
    let summary = run_watched(rollbacks.clone());
    assert!(
        disagreement(&rollbacks.0.render(), &summary).is_some(),
        "a rolled-back batch missing from the metrics went unnoticed"
    );
}

#[test]
fn the_dashboard_check_finds_a_series_nobody_exports() {
    let dashboard = r#"{"panels": [{"targets": [
        {"expr": "sum by (outcome) (rate(inbox_deliveries_total{outcome=\"applied\"}[5m]))"},
        {"expr": "histogram_quantile(0.99, sum by (le) (rate(inbox_commit_duration_seconds_bucket[5m])))"},
        {"expr": "sum(rate(inbox_applied_total[5m]))"}
    ]}]}"#;
    assert_eq!(
        dashboard_series(dashboard),
        [
            "inbox_applied_total",
            "inbox_commit_duration_seconds_bucket",
            "inbox_deliveries_total"
        ]
    );
    let fixture = Fixture::new();
    let text = Metrics::watching(fixture.database(), &["debit"]).render();
    assert_eq!(dashboard_gaps(dashboard, &text), ["inbox_applied_total"]);
    assert!(
        dashboard_series(DASHBOARD).len() >= 8,
        "the shipped dashboard queries too little: {:?}",
        dashboard_series(DASHBOARD)
    );
}
