//! The transactional inbox on SQLite (feature `sqlite`): the inbox row,
//! the handler's writes and the failure counts in one transaction per
//! batch, the dead letters beside them, and the database file that holds
//! them with a project's tables ([`Database`]), and the relay's queue over
//! the project's outbox ([`OutboxQueue`]).
//!
//! This is the kit's half of a SQLite consumer, the half that must not be
//! edited to make a consumer pass: how a delivery is claimed, rolled back
//! and counted, how the file is opened, its schema created and its old
//! rows purged. The project's half is its tables and their SQL; it hands
//! them over by implementing [`SqliteHandlers`] and [`SqliteProject`] for
//! its [`Registry`]. The inbox's own tables are [`SCHEMA`], created before
//! the handlers' tables.

mod database;
mod inbox;
#[cfg(feature = "cli")]
mod options;
pub mod outbox;
mod poison;
pub mod retention;

pub use database::{Database, Durability, QUIET_LOGS, Settings, SqliteProject};
pub use inbox::SqliteInbox;
#[cfg(feature = "cli")]
pub use options::DatabaseOptions;
pub use outbox::{OutboxQueue, OutboxRow};

/// The inbox's own tables (`inbox`, `attempts`, `dead_letters`), each
/// created if missing: run it in the transaction that creates the
/// handlers' tables.
pub const SCHEMA: &str = include_str!("schema.sql");

use rusqlite::Connection;

use crate::handler::{HandlerError, Registry};
use crate::message::Message;

/// What the SQLite inbox needs from a project's handlers beyond
/// [`Registry`]: running one on the project's tables over the delivery's
/// connection, inside the transaction the inbox holds.
///
/// Both are a line each in a project (`handler.apply(&mut
/// SqliteTables::new(db), message)`): the runtime cannot write them
/// because it cannot name the project's tables.
pub trait SqliteHandlers: Registry {
    /// Applies `message` through `handler` on the tables over `db`.
    fn apply(
        handler: &Self::Handler<'_>,
        db: &Connection,
        message: &Message<Self::Event>,
    ) -> Result<(), HandlerError>;

    /// Applies `messages`, in order, through `handler`'s set-based path
    /// ([`crate::handler::SetBased`]); called only for a handler that has
    /// one ([`Registry::has_set_based`]).
    fn apply_all(
        handler: &Self::Handler<'_>,
        db: &Connection,
        messages: &[&Message<Self::Event>],
    ) -> Result<(), HandlerError>;
}
