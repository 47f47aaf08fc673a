//! This project's half of its SQLite database: its tables and the SQL
//! behind each handler's trait (`tables.rs`) and how a row of
//! its outbox becomes a [`Notification`] for the runtime's relay queue,
//! handed to the runtime's [`Database`] below. The runtime opens the file in WAL mode, creates the
//! inbox's tables and these, runs the inbox on them and purges old rows
//! (`inbox_kit_runtime::sqlite`): the kit's code, not edited here.
//!
//! This module is the only place that knows the database is SQLite: the
//! rest of the crate goes through [`crate::store::Store`],
//! [`crate::handlers::Tables`] and [`crate::inbox::Inbox`].

mod tables;

pub use inbox_kit_runtime::sqlite::{Durability, QUIET_LOGS, Settings};
pub use tables::SqliteTables;

use std::path::Path;

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::sqlite::{OutboxQueue, OutboxRow, SqliteHandlers, SqliteProject};
use rusqlite::{Connection, Row};

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
    const TABLES: &str = tables::TABLES;
    const ADDED_COLUMNS: &[(&str, &str, &str)] = &[("notifications", "trace_parent", "TEXT")];
    const DURABILITY: Durability = crate::defaults::DURABILITY;
    type Tables<'t> = dyn Tables + 't;
    type Notice = Notification;
    type Queue = OutboxQueue<Notification>;

    fn on_tables<T>(db: &Connection, work: impl FnOnce(&mut (dyn Tables + '_)) -> T) -> T {
        work(&mut SqliteTables::new(db))
    }

    fn relay_queue(db: Connection, path: &Path) -> Result<Self::Queue, StorageError> {
        OutboxQueue::open(db, path)
    }
}

/// A row of the `notifications` outbox (`tables.rs`) as the relay sends
/// it.
impl OutboxRow for Notification {
    fn outbox_key(&self) -> (&str, &str) {
        (&self.event_id, &self.channel)
    }

    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Notification {
            event_id: row.get("event_id")?,
            channel: row.get("channel")?,
            account: row.get("account")?,
            body: row.get("body")?,
            trace_parent: row.get("trace_parent")?,
        })
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

#[cfg(test)]
mod tests {
    use inbox_kit_runtime::sqlite::outbox::DUE;

    use super::*;

    /// The relay's take reads its rows from this schema's index, in order,
    /// and stops at the limit: sorting the rows left to send at every take
    /// would make a relay working off a backlog slower with every row
    /// still in it.
    #[test]
    fn a_take_reads_the_due_rows_in_index_order() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(Handlers::TABLES).unwrap();
        let mut explain = db.prepare(&format!("EXPLAIN QUERY PLAN {DUE}")).unwrap();
        let plan: Vec<String> = explain
            .query_map((0, 100), |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX"))
                && !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }
}
