//! Retention: `purge` deletes what is older than its window, keeps what is
//! younger, and can run while deliveries go on.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, params};

use {{crate_name}}::database::{Database, Settings};
use {{crate_name}}::handlers::Debit;
use {{crate_name}}::retention::{self, check_window};

use crate::support::harness::{
    Fixture, InboxUnderTest, RealInbox, Subject, deliver_all, inbox_rows, once_only_state,
};
use crate::support::subjects::{DebitSubject, payments};

const DAY: Duration = Duration::from_secs(86_400);

fn millis_ago(age: Duration) -> i64 {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    (now - age).as_millis() as i64
}

/// Rows as a consumer would have left them `age` ago.
fn insert_old_rows(db: &Connection, consumer: &str, count: usize, age: Duration) {
    let tx = db.unchecked_transaction().unwrap();
    for n in 0..count {
        tx.execute(
            "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
            params![consumer, format!("old-{n:06}"), millis_ago(age)],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
             VALUES (?1, ?2, 1, 'x', ?3)",
            params![consumer, format!("old-failed-{n:06}"), millis_ago(age)],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn purge_deletes_only_rows_older_than_the_window_in_bounded_batches() {
    let fixture = Fixture::new(&RealInbox::ONE_PER_TRANSACTION, &[&DebitSubject]);
    let db = fixture.connection();
    insert_old_rows(&db, "debit", 2_345, 100 * DAY);
    insert_old_rows(&db, "notify", 10, 100 * DAY);
    let mut worker = RealInbox::ONE_PER_TRANSACTION.open(&fixture.path);
    deliver_all(worker.as_mut(), &Debit, &payments(20));

    let database = Database::new(&fixture.path, Settings::default());
    let mut reports = 0;
    let purged = retention::purge(&database, 30 * DAY, 100, |_| reports += 1).unwrap();
    assert_eq!(purged.inbox_rows, 2_355);
    assert_eq!(purged.attempt_rows, 2_355);
    assert!(
        reports >= 24,
        "one progress report per batch of 100, got {reports}"
    );
    assert_eq!(inbox_rows(&db, "debit"), 20, "the recent rows stay");
    assert_eq!(inbox_rows(&db, "notify"), 0);
}

#[test]
fn a_duplicate_inside_the_window_is_still_caught_after_a_purge() {
    let fixture = Fixture::new(&RealInbox::BATCHED, &[&DebitSubject]);
    let messages = payments(50);
    let mut worker = RealInbox::BATCHED.open(&fixture.path);
    deliver_all(worker.as_mut(), &Debit, &messages);

    let database = Database::new(&fixture.path, Settings::default());
    let purged = retention::purge(&database, DAY, 7, |_| {}).unwrap();
    assert_eq!(purged.inbox_rows, 0);

    let again = deliver_all(worker.as_mut(), &Debit, &messages);
    assert_eq!(again.duplicate, 50);
    assert_eq!(
        DebitSubject.state(&fixture.connection()),
        once_only_state(&DebitSubject, &messages).unwrap()
    );
}

#[test]
fn purging_while_delivering_loses_nothing_and_doubles_nothing() {
    let inbox = RealInbox::ONE_PER_TRANSACTION;
    let fixture = Fixture::new(&inbox, &[&DebitSubject]);
    insert_old_rows(&fixture.connection(), "debit", 5_000, 100 * DAY);
    let messages = payments(200);
    let database = Database::new(&fixture.path, Settings::default());

    let outcomes = std::thread::scope(|scope| {
        let purge = scope.spawn(|| retention::purge(&database, 30 * DAY, 50, |_| {}).unwrap());
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let mut worker = inbox.open(&fixture.path);
                let messages = &messages;
                scope.spawn(move || {
                    let mut total = deliver_all(worker.as_mut(), &Debit, messages);
                    total += deliver_all(worker.as_mut(), &Debit, messages);
                    total
                })
            })
            .collect();
        assert_eq!(purge.join().unwrap().inbox_rows, 5_000);
        workers.into_iter().map(|w| w.join().unwrap()).fold(
            Default::default(),
            |mut a: {{crate_name}}::pipeline::Summary, b| {
                a += b;
                a
            },
        )
    });
    assert_eq!(
        (outcomes.applied, outcomes.duplicate, outcomes.failed),
        (200, 600, 0)
    );
    let db = fixture.connection();
    assert_eq!(
        inbox_rows(&db, "debit"),
        200,
        "all old rows gone, every new one kept"
    );
    assert_eq!(
        DebitSubject.state(&db),
        once_only_state(&DebitSubject, &messages).unwrap()
    );
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
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("purge.db");
    let purge = |args: &[&str]| {
        crate::consumer(&db)
            .arg("purge")
            .args(args)
            .output()
            .unwrap()
    };
    let missing = purge(&["--older-than", "30d"]);
    assert_eq!(
        missing.status.code(),
        Some(1),
        "a mistyped --db must not create a database"
    );
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no database at"));
    let created = crate::run_consumer(&db, &["open-account", "1", "0"]);
    assert!(created.status.success());

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
            "purged inbox_rows=0 attempt_rows=0\n"
        );
    }
}
