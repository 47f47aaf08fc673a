//! Broken designs that only SQLite makes possible, each with the scenario
//! that must catch it: an inbox keyed by message id alone, a deferred
//! `BEGIN` before a read, and a batch that carries on after a trigger
//! ended its transaction. A project's teeth play them ([`traps`] and
//! [`whole_transaction_traps`]); the broken keys of its own tables stay in
//! the project.

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

use super::{SqliteFixture, SqliteRaw, SqliteTest};
use crate::broken::{Trap, WithSchema};
use crate::harness::env::now_millis;
use crate::harness::scenarios::Scenario;
use crate::harness::{HandlerOf, InboxUnderTest, Project, Raw};

/// The traps of this database, for a project's teeth.
pub fn traps<P>() -> Vec<Trap<P>>
where
    P: SqliteTest + Project<Fixture = SqliteFixture<P>>,
{
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
/// Caught by both consumers: once one consumer has recorded a message, the
/// other sees its id as a duplicate and never applies it.
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

/// A deferred `BEGIN` where `BEGIN IMMEDIATE` belongs, in a transaction
/// that reads before it writes (here: it double-checks the inbox with a
/// SELECT before inserting). Under IMMEDIATE this code is safe on SQLite,
/// because the write lock is taken before the read. Under DEFERRED the
/// read pins a snapshot; when another worker commits first, SQLite cannot
/// upgrade that snapshot to a write and fails at once with SQLITE_BUSY,
/// whatever the busy timeout. Caught by parallel: deliveries fail under
/// contention, and a contended lock must never be a failure.
pub struct DeferredCheck;

struct Deferred<P>(SqliteRaw<P>);

impl<P: SqliteTest> Deferred<P> {
    fn deliver(
        &mut self,
        handler: &HandlerOf<'_, P>,
        message: &Message<P::Event>,
    ) -> Result<Outcome, StorageError> {
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        self.0.connection().execute_batch("BEGIN DEFERRED")?;
        if self.0.is_recorded(consumer, id)? || !self.0.record(consumer, id, now_millis())? {
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

impl<P: SqliteTest> Inbox<P::Registry> for Deferred<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
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

impl<P> InboxUnderTest<P> for DeferredCheck
where
    P: SqliteTest + Project<Fixture = SqliteFixture<P>>,
{
    fn name(&self) -> String {
        "deferred BEGIN".into()
    }
    fn open(&self, fixture: &SqliteFixture<P>) -> Box<dyn Inbox<P::Registry>> {
        Box::new(Deferred(SqliteRaw::<P>::new(
            fixture.database().connect().expect("connect"),
        )))
    }
}

/// Broken inboxes for a handler's statement that ends the whole
/// transaction (which SQLite can do), for the statement scenario.
pub fn whole_transaction_traps<P>() -> Vec<Box<dyn InboxUnderTest<P>>>
where
    P: SqliteTest + Project<Fixture = SqliteFixture<P>>,
{
    vec![Box::new(CarriesOnAfterRollback)]
}

/// A batch with a savepoint per delivery, as it should be, that never
/// asks whether the transaction is still there. A trigger's
/// `RAISE(ROLLBACK)` ends the whole transaction: the deliveries before it
/// are rolled back though reported applied, and the ones after it run in
/// transactions of their own (a SAVEPOINT outside a transaction starts
/// one). Caught by a handler's statement that ends its transaction.
pub struct CarriesOnAfterRollback;

struct CarriesOn<P>(SqliteRaw<P>);

impl<P: SqliteTest> Inbox<P::Registry> for CarriesOn<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        self.0.begin()?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for delivery in batch {
            let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
            let _ = self.0.connection().execute_batch("SAVEPOINT delivery");
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

impl<P> InboxUnderTest<P> for CarriesOnAfterRollback
where
    P: SqliteTest + Project<Fixture = SqliteFixture<P>>,
{
    fn name(&self) -> String {
        "carries on after the transaction ended".into()
    }
    fn open(&self, fixture: &SqliteFixture<P>) -> Box<dyn Inbox<P::Registry>> {
        Box::new(CarriesOn(SqliteRaw::<P>::new(
            fixture.database().connect().expect("connect"),
        )))
    }
}
