//! The inbox on SQLite.
//!
//! Every batch is one `BEGIN IMMEDIATE` transaction. IMMEDIATE takes the
//! write lock up front, so a transaction never holds a read snapshot that
//! SQLite would later refuse to upgrade. Each delivery inside the batch
//! runs under its own SAVEPOINT, so a failing handler rolls back only its
//! own delivery (its inbox row included) and the rest of the batch commits;
//! the failure is then counted outside that savepoint (see `poison.rs`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{CachedStatement, Connection, TransactionBehavior, ffi};

use super::{Delivery, Inbox, Outcome, StorageError, poison};
use crate::handler::{Handler, HandlerError};
use crate::message::Message;

/// One connection's inbox. Open it with [`crate::database::Database::inbox`].
pub struct SqliteInbox {
    db: Connection,
    max_attempts: u32,
}

impl SqliteInbox {
    pub(crate) fn new(db: Connection, max_attempts: u32) -> Self {
        Self { db, max_attempts }
    }

    /// Gives a dead letter another chance, in one transaction: forget its
    /// inbox row and attempt count, deliver it again, and delete the dead
    /// letter only if it applied. If it fails again, everything is rolled
    /// back and the dead letter stays as it was.
    pub fn redrive(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let now = unix_millis();
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        poison::forget(&tx, consumer, id)?;
        let outcome = {
            let mut statements = Statements::prepare(&tx)?;
            let delivery = Delivery { handler, message };
            deliver_one(&tx, &mut statements, &delivery, now, u32::MAX)?
        };
        if outcome == Outcome::Applied {
            poison::bury(&tx, consumer, id)?;
            tx.commit()?;
        }
        Ok(outcome)
    }

    /// The underlying connection, for reading state (tests, status).
    pub fn connection(&self) -> &Connection {
        &self.db
    }
}

impl Inbox for SqliteInbox {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let received_at = unix_millis();
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcomes = {
            let mut statements = Statements::prepare(&tx)?;
            batch
                .iter()
                .map(|delivery| {
                    deliver_one(
                        &tx,
                        &mut statements,
                        delivery,
                        received_at,
                        self.max_attempts,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        tx.commit()?;
        Ok(outcomes)
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

fn deliver_one(
    db: &Connection,
    statements: &mut Statements<'_>,
    delivery: &Delivery<'_>,
    received_at: i64,
    max_attempts: u32,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    statements.savepoint.execute([])?;
    if !record(&mut statements.record, consumer, id, received_at)? {
        statements.release.execute([])?;
        tracing::debug!(consumer, message_id = id, "duplicate delivery skipped");
        return Ok(Outcome::Duplicate);
    }
    match apply(delivery, db) {
        Ok(()) => {
            statements.release.execute([])?;
            Ok(Outcome::Applied)
        }
        Err(error) => {
            statements.rollback_to.execute([])?;
            statements.release.execute([])?;
            if let Some(fault) = storage_fault(&error) {
                return Err(fault);
            }
            poison::record_failure(db, delivery, &error.to_string(), received_at, max_attempts)
        }
    }
}

/// Whether `error` is the inbox's primary key refusing a second row for the
/// same (consumer, message id): SQLite's extended result code
/// `SQLITE_CONSTRAINT_PRIMARYKEY`. Never decided from the error's text,
/// which is not a stable interface.
pub fn is_duplicate_key(error: &rusqlite::Error) -> bool {
    error.sqlite_extended_error_code() == Some(ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
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
        Err(error) => Err(StorageError(error)),
    }
}

/// Runs the handler; a panic counts as a failure of this delivery instead of
/// taking the worker (and the batch's other deliveries) down with it.
fn apply(delivery: &Delivery<'_>, db: &Connection) -> Result<(), HandlerError> {
    catch_unwind(AssertUnwindSafe(|| {
        delivery.handler.apply(db, delivery.message)
    }))
    .unwrap_or_else(|panic| Err(panic_message(panic).into()))
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("handler panicked: {text}")
}

/// A handler error that is really the database failing (full disk, read-only
/// file, lock held too long): not the message's fault, so it aborts the batch
/// instead of counting against the message.
fn storage_fault(error: &HandlerError) -> Option<StorageError> {
    use rusqlite::ErrorCode::*;
    let sqlite = error.downcast_ref::<rusqlite::Error>()?;
    let failure = *sqlite.sqlite_error()?;
    let is_fault = matches!(
        failure.code,
        DiskFull
            | ReadOnly
            | DatabaseBusy
            | DatabaseLocked
            | SystemIoFailure
            | OutOfMemory
            | CannotOpen
            | DatabaseCorrupt
    );
    is_fault.then(|| {
        StorageError(rusqlite::Error::SqliteFailure(
            failure,
            Some(sqlite.to_string()),
        ))
    })
}

fn unix_millis() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}
