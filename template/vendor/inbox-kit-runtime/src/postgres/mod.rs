//! The transactional inbox on PostgreSQL (feature `postgres`): every
//! batch's inbox rows claimed in one statement, each delivery under a
//! savepoint, failure counts and dead letters beside them, conflicts
//! retried, on a pipelined connection.
//!
//! As on SQLite, this is the kit's half of a consumer, the half that must
//! not be edited to make a consumer pass, with the database that holds it
//! and a project's tables ([`Database`]: connections, the schema's
//! creation, the purge). The project's half is its tables: it hands them
//! over by implementing [`PgHandlers`] (the statements its tables prepare
//! on each connection, and running a handler on them) and [`PgProject`]
//! for its [`Registry`]. The inbox's own tables are [`SCHEMA`], created
//! before the handlers' tables.

mod database;
mod inbox;
#[cfg(feature = "cli")]
mod options;
pub mod outbox;
mod pipelined;
mod poison;
pub mod retention;

pub use database::{Database, PgProject, QUIET_LOGS, Settings};
pub use inbox::{CONFLICT_RETRIES, PgInbox};
#[cfg(feature = "cli")]
pub use options::DatabaseOptions;
pub use outbox::{OutboxQueue, OutboxRow};
pub use pipelined::{Exec, Pipelined};

use crate::handler::{HandlerError, Registry};
use crate::message::Message;
use crate::storage::StorageError;

/// The inbox's own tables (`inbox`, `attempts`, `dead_letters`), each
/// created if missing: run it in the transaction that creates the
/// handlers' tables.
pub const SCHEMA: &str = include_str!("schema.sql");

/// What the PostgreSQL inbox needs from a project's handlers beyond
/// [`Registry`]: the statements of their tables, prepared once per
/// connection, and running a handler on the tables over the delivery's
/// transaction.
pub trait PgHandlers: Registry {
    /// Every statement the handlers' tables run, prepared on one
    /// connection.
    type Statements: Send + 'static;

    /// Prepares [`Self::Statements`] on a new inbox connection.
    fn prepare(client: &mut Pipelined) -> Result<Self::Statements, StorageError>;

    /// Applies `message` through `handler` on the tables over `tx`.
    fn apply(
        handler: &Self::Handler<'_>,
        tx: &mut Pipelined,
        statements: &Self::Statements,
        message: &Message<Self::Event>,
    ) -> Result<(), HandlerError>;

    /// Applies `messages`, in order, through `handler`'s set-based path
    /// ([`crate::handler::SetBased`]); called only for a handler that has
    /// one ([`Registry::has_set_based`]).
    fn apply_all(
        handler: &Self::Handler<'_>,
        tx: &mut Pipelined,
        statements: &Self::Statements,
        messages: &[&Message<Self::Event>],
    ) -> Result<(), HandlerError>;
}

/// Where the inbox's connections come from: a project's database, which
/// knows the server, the settings and the schema.
pub trait Connect: Send + 'static {
    /// A new connection for the inbox, its session set up (schema, lock
    /// timeouts).
    fn inbox_connection(&self) -> Result<Pipelined, StorageError>;
}
