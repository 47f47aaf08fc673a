//! The database steps that hand-written inboxes are made of.
//!
//! Each database's fixture implements [`Raw`] on one connection; the
//! known-broken inboxes combine its steps, so that each broken design is
//! written once and tried on every database, and the once-only route
//! applies a message with no inbox at all ([`apply_alone`]).

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::inbox::DeadLetter;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

use super::project::{HandlerOf, Project};

/// One connection to a database of project `P`, driven one statement at a
/// time.
pub trait Raw<P: Project>: Send {
    /// Begins a transaction that will write (on SQLite, `BEGIN IMMEDIATE`).
    fn begin(&mut self) -> Result<(), StorageError>;
    fn commit(&mut self) -> Result<(), StorageError>;
    /// Rolls back the open transaction, if there is one.
    fn rollback(&mut self);
    /// Whether the inbox holds (consumer, id): a plain SELECT.
    fn is_recorded(&mut self, consumer: &str, id: &str) -> Result<bool, StorageError>;
    /// Inserts an inbox row received at `received_at` (milliseconds since
    /// the Unix epoch); `Ok(false)` when the row was already there.
    fn record(&mut self, consumer: &str, id: &str, received_at: i64) -> Result<bool, StorageError>;
    /// Runs the handler on the tables, in whatever transaction is open.
    fn apply(
        &mut self,
        handler: &HandlerOf<'_, P>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError>;
    /// Runs a handler's set-based path (it must have one) on the tables,
    /// in whatever transaction is open.
    fn apply_all(
        &mut self,
        handler: &HandlerOf<'_, P>,
        messages: &[&Message<P::Event>],
    ) -> Result<(), HandlerError>;
    /// Runs statements that take no parameters and return no rows
    /// (`SAVEPOINT s`, `ROLLBACK TO SAVEPOINT s`).
    fn run(&mut self, sql: &str) -> Result<(), StorageError>;
    /// Adds one failed attempt, failed at `at`, to the count of (consumer,
    /// id); returns the count.
    fn count_failure(
        &mut self,
        consumer: &str,
        id: &str,
        error: &str,
        at: i64,
    ) -> Result<u32, StorageError>;
    /// Failures counted for (consumer, id), 0 if none.
    fn failures(&mut self, consumer: &str, id: &str) -> Result<u32, StorageError>;
    /// Writes a dead letter (replacing one of the same key).
    fn dead_letter(&mut self, letter: &DeadLetter) -> Result<(), StorageError>;
    /// Deletes the inbox row of (consumer, id).
    fn delete_inbox_row(&mut self, consumer: &str, id: &str) -> Result<(), StorageError>;
    /// Deletes the dead letter of (consumer, id).
    fn delete_dead_letter(&mut self, consumer: &str, id: &str) -> Result<(), StorageError>;
}

/// Applies `message` straight through its handler in a transaction of its
/// own, with no inbox: how the oracle applies each message once, and how a
/// test delivers a repeat *past* the inbox.
pub fn apply_alone<P: Project>(
    raw: &mut dyn Raw<P>,
    handler: &HandlerOf<'_, P>,
    message: &Message<P::Event>,
) -> Result<(), HandlerError> {
    raw.begin()?;
    match raw.apply(handler, message) {
        Ok(()) => Ok(raw.commit()?),
        Err(error) => {
            raw.rollback();
            Err(error)
        }
    }
}
