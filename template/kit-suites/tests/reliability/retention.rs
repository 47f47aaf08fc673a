//! Retention: `purge` deletes what is older than its window in bounded
//! batches, and can run while deliveries go on. (The exact edge of the
//! window is a required test: `tests/conformance/retention.rs`.)

use std::time::Duration;

use {{crate_name}}::handlers::Debit;
use {{crate_name}}::pipeline::Summary;
use {{crate_name}}::retention::check_window;
use {{crate_name}}::store::Store;

use crate::support::database::Fixture;
use crate::support::harness::{
    RealInbox, assert_applied_once, deliver_all, fixture_for, inbox_rows, now_millis,
};
use crate::support::subjects::{DebitSubject, payments};

const DAY: Duration = Duration::from_secs(86_400);

/// Inbox rows and failed attempts as a consumer would have left them
/// `age` ago.
fn insert_old_rows(fixture: &Fixture, consumer: &str, count: usize, age: Duration) {
    let mut raw = fixture.raw();
    let received_at = now_millis() - age.as_millis() as i64;
    raw.begin().unwrap();
    for n in 0..count {
        raw.record(consumer, &format!("old-{n:06}"), received_at)
            .unwrap();
        raw.count_failure(consumer, &format!("old-failed-{n:06}"), "x", received_at)
            .unwrap();
    }
    raw.commit().unwrap();
}

#[test]
fn purge_deletes_only_rows_older_than_the_window_in_bounded_batches() {
    let fixture = fixture_for(&RealInbox::ONE_PER_TRANSACTION, &[&DebitSubject::real()]);
    insert_old_rows(&fixture, "debit", 2_345, 100 * DAY);
    insert_old_rows(&fixture, "notify", 10, 100 * DAY);
    let mut worker = RealInbox::ONE_PER_TRANSACTION.open(&fixture);
    deliver_all(worker.as_mut(), &Debit, &payments(20));

    let mut reports = 0;
    let purged = fixture
        .database()
        .purge(30 * DAY, 100, &mut |_| reports += 1)
        .unwrap();
    assert_eq!(purged.inbox_rows, 2_355);
    assert_eq!(purged.attempt_rows, 2_355);
    assert!(
        reports >= 24,
        "one progress report per batch of 100, got {reports}"
    );
    assert_eq!(inbox_rows(&fixture, "debit"), 20, "the recent rows stay");
    assert_eq!(inbox_rows(&fixture, "notify"), 0);
}

#[test]
fn purging_while_delivering_loses_nothing_and_doubles_nothing() {
    let subject = DebitSubject::real();
    let inbox = RealInbox::ONE_PER_TRANSACTION;
    let fixture = fixture_for(&inbox, &[&subject]);
    insert_old_rows(&fixture, "debit", 5_000, 100 * DAY);
    let messages = payments(200);
    let database = fixture.database();

    let outcomes = std::thread::scope(|scope| {
        let purge = scope.spawn(|| database.purge(30 * DAY, 50, &mut |_| {}).unwrap());
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let mut worker = inbox.open(&fixture);
                let messages = &messages;
                scope.spawn(move || {
                    let mut total = deliver_all(worker.as_mut(), &Debit, messages);
                    total += deliver_all(worker.as_mut(), &Debit, messages);
                    total
                })
            })
            .collect();
        assert_eq!(purge.join().unwrap().inbox_rows, 5_000);
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold(Summary::default(), |mut total, one| {
                total += one;
                total
            })
    });
    assert_eq!(
        (outcomes.applied, outcomes.duplicate, outcomes.failed),
        (200, 600, 0)
    );
    assert_eq!(
        inbox_rows(&fixture, "debit"),
        200,
        "all old rows gone, every new one kept"
    );
    assert_applied_once(&fixture, &subject, &messages);
}

#[test]
fn a_window_inside_the_redelivery_horizon_is_refused() {
    let error = check_window(DAY, 14 * DAY, false).unwrap_err().to_string();
    assert!(error.contains("redelivery horizon (14days)"), "{error}");
    assert!(
        check_window(DAY, 14 * DAY, true).is_ok(),
        "--force overrides"
    );
}

/// Through the command line: a window inside the horizon is refused with
/// an explanation unless `--force`d; a longer one runs.
#[test]
fn the_purge_command_refuses_a_short_window_unless_forced() {
    let fixture = Fixture::new();
    let purge = |args: &[&str]| {
        crate::consumer(&fixture)
            .arg("purge")
            .args(args)
            .output()
            .unwrap()
    };
    let refused = purge(&["--older-than", "1d"]);
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("refusing to purge rows younger than the redelivery horizon (14days)"),
        "{stderr}"
    );

    for args in [
        &["--older-than", "1d", "--force"][..],
        &["--older-than", "30d"][..],
    ] {
        let done = purge(args);
        assert_eq!(done.status.code(), Some(0), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&done.stdout),
            "purged inbox_rows=0 attempt_rows=0 sent_notifications=0\n"
        );
    }
}
