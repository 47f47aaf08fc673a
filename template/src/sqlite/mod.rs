//! This project's half of its SQLite database: its tables (`schema.sql`,
//! and the SQL behind each handler's trait in `tables.rs`) and the relay's
//! queue over its outbox (`relay.rs`), handed to the runtime's
//! [`Database`] below. The runtime opens the file in WAL mode, creates the
//! inbox's tables and these, runs the inbox on them and purges old rows
//! (`inbox_kit_runtime::sqlite`): the kit's code, not edited here.
//!
//! This module is the only place that knows the database is SQLite: the
//! rest of the crate goes through [`crate::store::Store`],
//! [`crate::handlers::Tables`] and [`crate::inbox::Inbox`].

mod relay;
mod tables;

pub use inbox_kit_runtime::sqlite::{Durability, QUIET_LOGS, Settings};
pub use relay::SqliteQueue;
pub use tables::SqliteTables;

use std::path::Path;

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::sqlite::{SqliteHandlers, SqliteProject};
use rusqlite::Connection;

use crate::handlers::{BorrowedHandler, Handlers, Notification, Tables};
use crate::inbox::StorageError;
use crate::message::Message;

/// A database file with the inbox and every handler's tables.
pub type Database = inbox_kit_runtime::sqlite::Database<Handlers>;

/// Where the database is: the global options of every command.
pub type DatabaseOptions = inbox_kit_runtime::sqlite::DatabaseOptions<Handlers>;

/// One connection's inbox: the runtime's, run on this project's tables.
pub type SqliteInbox = inbox_kit_runtime::sqlite::SqliteInbox<Handlers>;

/// What the runtime's database needs of this project.
impl SqliteProject for Handlers {
    const TABLES: &str = include_str!("schema.sql");
    const ADDED_COLUMNS: &[(&str, &str, &str)] = &[("notifications", "trace_parent", "TEXT")];
    const DURABILITY: Durability = crate::defaults::DURABILITY;
    type Tables<'t> = dyn Tables + 't;
    type Notice = Notification;
    type Queue = SqliteQueue;

    fn on_tables<T>(db: &Connection, work: impl FnOnce(&mut (dyn Tables + '_)) -> T) -> T {
        work(&mut SqliteTables::new(db))
    }

    fn relay_queue(db: Connection, path: &Path) -> Result<SqliteQueue, StorageError> {
        SqliteQueue::open(db, path)
    }
}

/// How the runtime's inbox hands a delivery to this project's handlers:
/// on [`SqliteTables`] over the connection of the delivery's transaction.
impl SqliteHandlers for Handlers {
    fn apply(
        handler: &BorrowedHandler<'_>,
        db: &Connection,
        message: &Message,
    ) -> Result<(), HandlerError> {
        handler.apply(&mut SqliteTables::new(db), message)
    }

    fn apply_all(
        handler: &BorrowedHandler<'_>,
        db: &Connection,
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        let tables = &mut SqliteTables::new(db);
        match handler.set_based() {
            Some(set_based) => set_based.apply_all(tables, messages),
            None => messages
                .iter()
                .try_for_each(|message| handler.apply(tables, message)),
        }
    }
}
