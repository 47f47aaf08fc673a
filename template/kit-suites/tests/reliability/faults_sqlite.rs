//! Database faults on SQLite: a full or read-only database fails the whole
//! batch with a clear error. Nothing is recorded, so nothing may be
//! acknowledged, and nothing counts as a failed attempt of the message;
//! once the fault is gone the same deliveries apply exactly once. And the
//! commands that only read refuse a database file that does not exist.

use {{crate_name}}::handlers::Debit;
use {{crate_name}}::inbox::{DeadLetters, Delivery, Inbox, Outcome, Policy};
use {{crate_name}}::store::Store;

use crate::support::database::Fixture;
use crate::support::harness::{RealInbox, assert_applied_once, fixture_for, inbox_rows};
use crate::support::subjects::{DebitSubject, payments};

fn fault_then_recover(break_it: &str, expected_error: &str, fix_it: &str) {
    let subject = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::ONE_PER_TRANSACTION, &[&subject]);
    let messages = payments(300);
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery::new(&Debit, message))
        .collect();
    let database = fixture.database();
    let mut inbox = database.inbox(Policy::default()).unwrap();
    // Pragmas are per connection: break the inbox's own one.
    inbox.connection().execute_batch(break_it).unwrap();

    let error = inbox.deliver_batch(&deliveries).unwrap_err();
    assert!(error.is_storage_fault(), "{error}");
    assert!(
        error.to_string().contains(expected_error),
        "unclear error: {error}"
    );
    assert_eq!(inbox_rows(&fixture, "debit"), 0, "nothing recorded");
    assert_applied_once(&fixture, &subject, &[]);
    assert_eq!(
        inbox.failures("debit", "pay-00001").unwrap(),
        0,
        "a storage fault is not the message's fault"
    );

    inbox.connection().execute_batch(fix_it).unwrap();
    let outcomes = inbox.deliver_batch(&deliveries).unwrap();
    assert!(outcomes.iter().all(|o| *o == Outcome::Applied));
    assert_applied_once(&fixture, &subject, &messages);
    assert_eq!(inbox_rows(&fixture, "debit"), 300);
}

#[test]
fn a_full_database_fails_the_batch_and_recovers() {
    // max_page_count caps the file at its current size: the next page fails.
    fault_then_recover(
        "PRAGMA max_page_count = 1;",
        "database or disk is full",
        "PRAGMA max_page_count = 1000000;",
    );
}

#[test]
fn a_read_only_database_fails_the_batch_and_recovers() {
    fault_then_recover(
        "PRAGMA query_only = ON;",
        "attempt to write a readonly database",
        "PRAGMA query_only = OFF;",
    );
}

/// A mistyped `--db` must not quietly create an empty database: the
/// commands that only read refuse a file that does not exist.
#[test]
fn read_only_commands_refuse_a_missing_database() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Fixture::attach(&dir.path().join("missing.db").display().to_string());
    for command in [
        &["status"][..],
        &["dead-letters", "list"],
        &["purge", "--older-than", "30d"],
    ] {
        let output = crate::run_consumer(&missing, command);
        assert_eq!(output.status.code(), Some(1), "{command:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("no database at"),
            "{command:?}"
        );
    }
    assert!(!dir.path().join("missing.db").exists());
}
