//! Database faults: a full or read-only database fails the whole batch with
//! a clear error. Nothing is recorded, so nothing may be acknowledged, and
//! nothing counts as a failed attempt of the message; once the fault is
//! gone the same deliveries apply exactly once.

use {{crate_name}}::database::{Database, Settings};
use {{crate_name}}::handlers::Debit;
use {{crate_name}}::inbox::{Delivery, Inbox, SqliteInbox, failures};

use crate::support::harness::{Fixture, RealInbox, Subject, inbox_rows, once_only_state};
use crate::support::subjects::{DebitSubject, payments};

fn inbox(fixture: &Fixture) -> SqliteInbox {
    Database::new(&fixture.path, Settings::default())
        .inbox()
        .unwrap()
}

fn fault_then_recover(break_it: &str, expected_error: &str, fix_it: &str) {
    let fixture = Fixture::new(&RealInbox::ONE_PER_TRANSACTION, &[&DebitSubject]);
    let messages = payments(300);
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery {
            handler: &Debit,
            message,
        })
        .collect();
    let mut inbox = inbox(&fixture);
    inbox.connection().execute_batch(break_it).unwrap();

    let error = inbox.deliver_batch(&deliveries).unwrap_err().to_string();
    assert!(error.contains(expected_error), "unclear error: {error}");
    let db = fixture.connection();
    assert_eq!(inbox_rows(&db, "debit"), 0, "nothing recorded");
    assert_eq!(
        DebitSubject.state(&db),
        once_only_state(&DebitSubject, &[]).unwrap(),
        "nothing applied"
    );
    assert_eq!(
        failures(&db, "debit", "pay-00001").unwrap(),
        0,
        "a storage fault is not the message's fault"
    );

    inbox.connection().execute_batch(fix_it).unwrap();
    let outcomes = inbox.deliver_batch(&deliveries).unwrap();
    assert!(
        outcomes
            .iter()
            .all(|o| *o == {{crate_name}}::inbox::Outcome::Applied)
    );
    assert_eq!(
        DebitSubject.state(&db),
        once_only_state(&DebitSubject, &messages).unwrap()
    );
    assert_eq!(inbox_rows(&db, "debit"), 300);
}

#[test]
fn a_full_database_fails_the_batch_and_recovers() {
    // max_page_count caps the file at its current size: the next page fails.
    let fixture_pages = "PRAGMA max_page_count = 1;";
    fault_then_recover(
        fixture_pages,
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
