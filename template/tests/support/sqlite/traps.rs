//! Broken designs that only SQLite has, and broken keys written in SQLite's
//! SQL: each with the scenario that must catch it (see `teeth`).

use {{crate_name}}::handlers::{BorrowedHandler, Handlers};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError};
use {{crate_name}}::message::Message;

use super::{Fixture, SqliteRaw};
use crate::support::broken::{Trap, WithSchema};
use crate::support::harness::Raw;
use crate::support::harness::{InboxUnderTest, Scenario, ThisProject, now_millis};

/// The traps of this database, for `teeth`.
pub fn traps() -> Vec<Trap> {
    vec![
        Trap {
            inbox: Box::new(keyed_by_message_id()),
            passes: vec![Scenario::RunTwice, Scenario::Parallel],
            caught_by: Scenario::BothConsumers,
        },
        Trap {
            inbox: Box::new(DeferredCheck),
            passes: vec![Scenario::RunTwice],
            caught_by: Scenario::Parallel,
        },
    ]
}

/// The inbox keyed by message id alone. Passes every single-consumer test.
/// Caught by both consumers: once `debit` has recorded a message, `notify`
/// sees its id as a duplicate and never sends the notifications.
pub fn keyed_by_message_id() -> WithSchema {
    WithSchema {
        name: "inbox keyed by message id alone",
        patch: "DROP TABLE inbox;
                CREATE TABLE inbox (
                    consumer    TEXT    NOT NULL,
                    message_id  TEXT    NOT NULL PRIMARY KEY,
                    received_at INTEGER NOT NULL
                );",
    }
}

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

/// A deferred `BEGIN` where `BEGIN IMMEDIATE` belongs, in a transaction
/// that reads before it writes (here: it double-checks the inbox with a
/// SELECT before inserting). Under IMMEDIATE this code is safe on SQLite,
/// because the write lock is taken before the read. Under DEFERRED the
/// read pins a snapshot; when another worker commits first, SQLite cannot
/// upgrade that snapshot to a write and fails at once with SQLITE_BUSY,
/// whatever the busy timeout. Caught by parallel: deliveries fail under
/// contention, and a contended lock must never be a failure.
pub struct DeferredCheck;

struct Deferred(SqliteRaw<ThisProject>);

impl Deferred {
    fn deliver(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        self.0.connection().execute_batch("BEGIN DEFERRED")?;
        if self.0.is_recorded(consumer, id)? {
            self.0.rollback();
            return Ok(Outcome::Duplicate);
        }
        if !self.0.record(consumer, id, now_millis())? {
            self.0.rollback();
            return Ok(Outcome::Duplicate);
        }
        if let Err(error) = self.0.apply(handler, message) {
            self.0.rollback();
            return Ok(Outcome::Failed(error.to_string()));
        }
        self.0.commit()?;
        Ok(Outcome::Applied)
    }
}

impl Inbox<Handlers> for Deferred {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        Ok(batch
            .iter()
            .map(|d| {
                self.deliver(d.handler, d.message).unwrap_or_else(|error| {
                    self.0.rollback();
                    Outcome::Failed(error.to_string())
                })
            })
            .collect())
    }
}

impl InboxUnderTest<ThisProject> for DeferredCheck {
    fn name(&self) -> String {
        "deferred BEGIN".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        Box::new(Deferred(SqliteRaw::new(
            fixture.database().connect().expect("connect"),
        )))
    }
}

/// Broken inboxes for a handler's statement that ends the whole
/// transaction (which SQLite can do), for the statement scenario.
pub fn whole_transaction_traps() -> Vec<Box<dyn InboxUnderTest<ThisProject>>> {
    vec![Box::new(CarriesOnAfterRollback)]
}

/// A batch with a savepoint per delivery, as it should be, that never
/// asks whether the transaction is still there. A trigger's
/// `RAISE(ROLLBACK)` ends the whole transaction: the deliveries before it
/// are rolled back though reported applied, and the ones after it run in
/// transactions of their own (a SAVEPOINT outside a transaction starts
/// one). Caught by the debit that ends its transaction.
pub struct CarriesOnAfterRollback;

struct CarriesOn(SqliteRaw<ThisProject>);

impl Inbox<Handlers> for CarriesOn {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.0.begin()?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for delivery in batch {
            let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
            let db = self.0.connection();
            let _ = db.execute_batch("SAVEPOINT delivery");
            if !self.0.record(consumer, id, now_millis())? {
                let _ = self.0.connection().execute_batch("RELEASE delivery");
                outcomes.push(Outcome::Duplicate);
                continue;
            }
            match self.0.apply(delivery.handler, delivery.message) {
                Ok(()) => {
                    let _ = self.0.connection().execute_batch("RELEASE delivery");
                    outcomes.push(Outcome::Applied);
                }
                Err(error) => {
                    // "no such savepoint" after RAISE(ROLLBACK): ignored.
                    let _ = self
                        .0
                        .connection()
                        .execute_batch("ROLLBACK TO delivery; RELEASE delivery");
                    let _ = self
                        .0
                        .count_failure(consumer, id, &error.to_string(), now_millis());
                    outcomes.push(Outcome::Failed(error.to_string()));
                }
            }
        }
        // "cannot commit: no transaction is active": ignored too.
        let _ = self.0.commit();
        Ok(outcomes)
    }
}

impl InboxUnderTest<ThisProject> for CarriesOnAfterRollback {
    fn name(&self) -> String {
        "carries on after the transaction ended".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        Box::new(CarriesOn(SqliteRaw::new(
            fixture.database().connect().expect("connect"),
        )))
    }
}
