//! The transactional inbox on SQLite (feature `sqlite`): the inbox row,
//! the handler's writes and the failure counts in one transaction per
//! batch, and the dead letters beside them.
//!
//! This is the kit's half of a SQLite consumer, the half that must not be
//! edited to make a consumer pass: how a delivery is claimed, rolled back
//! and counted. The project's half is its tables and their SQL; it hands
//! them to this inbox by implementing [`SqliteHandlers`] for its
//! [`Registry`]. The inbox's own tables are [`SCHEMA`], which a project
//! creates before its handlers' tables.

mod inbox;
mod poison;
pub mod retention;

pub use inbox::SqliteInbox;

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
