//! The inbox on SQLite.
//!
//! Every batch is one `BEGIN IMMEDIATE` transaction. IMMEDIATE takes the
//! write lock up front, so a transaction never holds a read snapshot that
//! SQLite would later refuse to upgrade. Each delivery inside the batch
//! runs under its own SAVEPOINT, so a failing handler rolls back only its
//! own delivery (its inbox row included) and the rest of the batch commits;
//! the failure is then counted outside that savepoint (see `poison.rs`).

use std::marker::PhantomData;
use std::time::SystemTime;

use rusqlite::{CachedStatement, Connection, TransactionBehavior};

use super::{SqliteHandlers, poison};
use crate::delivery::{DeadLetters, Delivery, Inbox};
use crate::handler::Subscriber;
use crate::inbox::{DeadLetter, Failure, Outcome, Policy, guarded, unix_millis};
use crate::message::Message;
use crate::steps::{Step, steps};
use crate::storage::sqlite::is_duplicate_key;
use crate::storage::{StorageError, StorageFault};

/// One connection's inbox, for the handlers of registry `R`.
pub struct SqliteInbox<R> {
    db: Connection,
    policy: Policy,
    handlers: PhantomData<fn() -> R>,
}

impl<R: SqliteHandlers> SqliteInbox<R> {
    /// The inbox on `db`, a connection to a database with the inbox's
    /// tables, giving up on a message as `policy` says.
    pub fn new(db: Connection, policy: Policy) -> Self {
        Self {
            db,
            policy,
            handlers: PhantomData,
        }
    }

    /// The connection itself: SQLite's settings are per connection, and
    /// the fault tests change this one's.
    pub fn connection(&self) -> &Connection {
        &self.db
    }
}

impl<R: SqliteHandlers> Inbox<R> for SqliteInbox<R> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        match self.try_batch(batch, steps(batch, self.policy))? {
            Some(outcomes) => Ok(outcomes),
            // A set-based attempt's error ended the whole transaction (see
            // `deliver_together`): the batch again, one delivery at a time,
            // where such an error is dealt with delivery by delivery.
            None => {
                let alone = (0..batch.len()).map(Step::Alone).collect();
                Ok(self
                    .try_batch(batch, alone)?
                    .expect("one at a time never asks for another try"))
            }
        }
    }
}

impl<R: SqliteHandlers> SqliteInbox<R> {
    /// The batch in one transaction, step by step; `None` if a set-based
    /// attempt ended the transaction (nothing of it committed).
    fn try_batch(
        &mut self,
        batch: &[Delivery<'_, R>],
        steps: Vec<Step>,
    ) -> Result<Option<Vec<Outcome>>, StorageError> {
        let received_at = unix_millis(SystemTime::now());
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut outcomes = Vec::with_capacity(batch.len());
        {
            let mut statements = Statements::prepare(&tx)?;
            for step in steps {
                match step {
                    Step::Alone(at) => outcomes.push(deliver_one(
                        &tx,
                        &mut statements,
                        &batch[at],
                        received_at,
                        self.policy,
                    )?),
                    Step::Together(run) => {
                        let Some(applied) = deliver_together(
                            &tx,
                            &mut statements,
                            &batch[run],
                            received_at,
                            self.policy,
                        )?
                        else {
                            return Ok(None);
                        };
                        outcomes.extend(applied);
                    }
                }
            }
        }
        tx.commit()?;
        Ok(Some(outcomes))
    }
}

impl<R: SqliteHandlers> DeadLetters<R> for SqliteInbox<R> {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        poison::dead_letters(&self.db)
    }

    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        poison::failures(&self.db, consumer, message_id)
    }

    fn redrive<'a>(
        &mut self,
        handler: &'a R::Handler<'a>,
        message: &'a Message<R::Event>,
    ) -> Result<Outcome, StorageError> {
        let now = unix_millis(SystemTime::now());
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        poison::forget(&tx, consumer, id)?;
        let outcome = {
            let mut statements = Statements::prepare(&tx)?;
            let delivery = Delivery::<R>::new(handler, message);
            let never_dead_letter = Policy {
                max_attempts: u32::MAX,
            };
            deliver_one(&tx, &mut statements, &delivery, now, never_dead_letter)?
        };
        if outcome == Outcome::Applied {
            poison::bury(&tx, consumer, id)?;
            tx.commit()?;
        }
        Ok(outcome)
    }
}

/// The inbox's own statements, looked up in the connection's statement
/// cache once per batch rather than once per delivery.
struct Statements<'db> {
    savepoint: CachedStatement<'db>,
    release: CachedStatement<'db>,
    rollback_to: CachedStatement<'db>,
    record: CachedStatement<'db>,
}

impl<'db> Statements<'db> {
    fn prepare(db: &'db Connection) -> rusqlite::Result<Self> {
        Ok(Self {
            savepoint: db.prepare_cached("SAVEPOINT delivery")?,
            release: db.prepare_cached("RELEASE delivery")?,
            rollback_to: db.prepare_cached("ROLLBACK TO delivery")?,
            record: db.prepare_cached(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
            )?,
        })
    }
}

fn deliver_one<R: SqliteHandlers>(
    db: &Connection,
    statements: &mut Statements<'_>,
    delivery: &Delivery<'_, R>,
    received_at: i64,
    policy: Policy,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    statements.savepoint.execute([])?;
    if !record(&mut statements.record, consumer, id, received_at)? {
        statements.release.execute([])?;
        tracing::debug!(consumer, message_id = id, "duplicate delivery skipped");
        return Ok(Outcome::Duplicate);
    }
    if policy.gave_up_on(delivery.delivered) {
        let outcome = poison::park(db, delivery, received_at)?;
        statements.release.execute([])?;
        return Ok(outcome);
    }
    let failure = match guarded(|| R::apply(delivery.handler, db, delivery.message))? {
        Ok(()) => {
            statements.release.execute([])?;
            return Ok(Outcome::Applied);
        }
        Err(failure) => failure,
    };
    if db.is_autocommit() {
        // The handler's error ended the whole transaction (SQLite does
        // that for RAISE(ROLLBACK) and some I/O errors): the batch is
        // lost. Record the failure in a transaction of its own, so that
        // such a message still reaches its dead letter, and report the
        // batch as not committed: nothing of it may be acknowledged.
        db.execute_batch("BEGIN IMMEDIATE")?;
        let reason = settle_failure(db, delivery, &failure, received_at, policy)?;
        db.execute_batch("COMMIT")?;
        return Err(StorageError::new(
            StorageFault::Unavailable,
            format!("a handler's error rolled back the whole batch: {reason:?}"),
        ));
    }
    statements.rollback_to.execute([])?;
    statements.release.execute([])?;
    settle_failure(db, delivery, &failure, received_at, policy)
}

/// A run of deliveries to one handler through its set-based path, under
/// one savepoint with their inbox rows; if that fails, all of it is rolled
/// back and each is delivered alone, so that only the failing ones fail.
/// `None`: the failure ended the whole transaction.
fn deliver_together<R: SqliteHandlers>(
    db: &Connection,
    statements: &mut Statements<'_>,
    run: &[Delivery<'_, R>],
    received_at: i64,
    policy: Policy,
) -> Result<Option<Vec<Outcome>>, StorageError> {
    let Some(handler) = run.first().map(|first| first.handler) else {
        return Ok(Some(Vec::new()));
    };
    statements.savepoint.execute([])?;
    let mut outcomes = Vec::with_capacity(run.len());
    let mut new = Vec::new();
    for delivery in run {
        let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
        if record(&mut statements.record, consumer, id, received_at)? {
            new.push(delivery.message);
            outcomes.push(Outcome::Applied);
        } else {
            tracing::debug!(consumer, message_id = id, "duplicate delivery skipped");
            outcomes.push(Outcome::Duplicate);
        }
    }
    let failure = match guarded(|| R::apply_all(handler, db, &new))? {
        Ok(()) => {
            statements.release.execute([])?;
            return Ok(Some(outcomes));
        }
        Err(failure) => failure,
    };
    if db.is_autocommit() {
        return Ok(None);
    }
    tracing::debug!(
        ?failure,
        deliveries = new.len(),
        "set-based attempt failed; applying its deliveries one at a time"
    );
    statements.rollback_to.execute([])?;
    statements.release.execute([])?;
    run.iter()
        .map(|delivery| deliver_one(db, statements, delivery, received_at, policy))
        .collect::<Result<_, _>>()
        .map(Some)
}

/// Records what a failed delivery means, once its writes are rolled back:
/// a counted failure (perhaps the last one, a dead letter), or a refusal,
/// dead-lettered at once.
fn settle_failure<R: SqliteHandlers>(
    db: &Connection,
    delivery: &Delivery<'_, R>,
    failure: &Failure,
    received_at: i64,
    policy: Policy,
) -> Result<Outcome, StorageError> {
    match failure {
        Failure::Failed(reason) => {
            poison::record_failure(db, delivery, reason, received_at, policy)
        }
        Failure::Refused(reason) => poison::refuse(db, delivery, reason, received_at),
    }
}

/// Inserts the inbox row. `Ok(false)` means the row exists: a duplicate.
fn record(
    insert: &mut CachedStatement<'_>,
    consumer: &str,
    id: &str,
    received_at: i64,
) -> Result<bool, StorageError> {
    match insert.execute((consumer, id, received_at)) {
        Ok(_) => Ok(true),
        Err(error) if is_duplicate_key(&error) => Ok(false),
        Err(error) => Err(error.into()),
    }
}
