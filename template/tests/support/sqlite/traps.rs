//! Broken keys of this project's tables, written in SQLite's SQL, each
//! caught by the business-key scenario (see `teeth`). The broken designs
//! SQLite itself makes possible are the test kit's
//! (`inbox_kit_testkit::sqlite::traps`), re-exported here for one path.

pub use inbox_kit_testkit::sqlite::traps::{keyed_by_message_id, traps, whole_transaction_traps};

use crate::support::broken::WithSchema;

/// Broken unique keys on the `debit` ledger's `debits` table.
pub fn broken_ledger_keys() -> Vec<WithSchema> {
    let table = |name, key| WithSchema { name, patch: key };
    vec![
        table(
            "debits with no unique key",
            "DROP TABLE debits;
             CREATE TABLE debits (payment_id TEXT NOT NULL, account INTEGER NOT NULL, amount INTEGER NOT NULL);",
        ),
        table(
            "debits unique per account (too coarse)",
            "DROP TABLE debits;
             CREATE TABLE debits (payment_id TEXT NOT NULL, account INTEGER NOT NULL UNIQUE, amount INTEGER NOT NULL);",
        ),
        table(
            "debits unique per payment and amount (too fine)",
            "DROP TABLE debits;
             CREATE TABLE debits (payment_id TEXT NOT NULL, account INTEGER NOT NULL, amount INTEGER NOT NULL,
                                  PRIMARY KEY (payment_id, amount));",
        ),
    ]
}

/// Broken unique keys on the `refund` consumer's `refunds` table.
pub fn broken_refund_keys() -> Vec<WithSchema> {
    let table = |name, key| WithSchema { name, patch: key };
    vec![
        table(
            "refunds with no unique key",
            "DROP TABLE refunds;
             CREATE TABLE refunds (refund_id TEXT NOT NULL, payment_id TEXT NOT NULL,
                                   account INTEGER NOT NULL, amount INTEGER NOT NULL);",
        ),
        table(
            "refunds unique per payment (too coarse)",
            "DROP TABLE refunds;
             CREATE TABLE refunds (refund_id TEXT NOT NULL, payment_id TEXT NOT NULL UNIQUE,
                                   account INTEGER NOT NULL, amount INTEGER NOT NULL);",
        ),
        table(
            "refunds unique per refund and amount (too fine)",
            "DROP TABLE refunds;
             CREATE TABLE refunds (refund_id TEXT NOT NULL, payment_id TEXT NOT NULL,
                                   account INTEGER NOT NULL, amount INTEGER NOT NULL,
                                   PRIMARY KEY (refund_id, amount));",
        ),
    ]
}

/// Broken unique keys on the `notify` outbox.
pub fn broken_outbox_keys() -> Vec<WithSchema> {
    let table = |name, key| WithSchema { name, patch: key };
    vec![
        table(
            "notifications with no unique key",
            "DROP TABLE notifications;
             CREATE TABLE notifications (event_id TEXT NOT NULL, channel TEXT NOT NULL,
                                         account INTEGER NOT NULL, body TEXT NOT NULL,
                                         trace_parent TEXT);",
        ),
        table(
            "notifications unique per event (too coarse)",
            "DROP TABLE notifications;
             CREATE TABLE notifications (event_id TEXT NOT NULL UNIQUE, channel TEXT NOT NULL,
                                         account INTEGER NOT NULL, body TEXT NOT NULL,
                                         trace_parent TEXT);",
        ),
        table(
            "notifications unique per event, channel and account (too fine)",
            "DROP TABLE notifications;
             CREATE TABLE notifications (event_id TEXT NOT NULL, channel TEXT NOT NULL,
                                         account INTEGER NOT NULL, body TEXT NOT NULL, trace_parent TEXT,
                                         UNIQUE (event_id, channel, account));",
        ),
    ]
}
