//! This project's half of its PostgreSQL database: its tables and the SQL
//! behind each handler's trait (`tables.rs`, prepared once per connection) and how a row of its outbox becomes a
//! [`Notification`] for the runtime's relay queue, handed to the runtime's
//! [`Database`] below. The runtime
//! connects, creates the schema and the tables, runs the inbox on them
//! (on a pipelined connection) and purges old rows
//! (`inbox_kit_runtime::postgres`): the kit's code, not edited here.
//!
//! This module is the only place that knows the database is PostgreSQL:
//! the rest of the crate goes through [`crate::store::Store`],
//! [`crate::handlers::Tables`] and [`crate::inbox::Inbox`].

mod tables;

pub use inbox_kit_runtime::postgres::{
    CONFLICT_RETRIES, Exec, Pipelined, QUIET_LOGS, SCHEMA as INBOX_SCHEMA, Settings,
};
pub use tables::{PgTables, TABLES, TableStatements};

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::postgres::{OutboxQueue, OutboxRow, PgHandlers, PgProject};
use postgres::{Row, Transaction};

use crate::handlers::{BorrowedHandler, Handlers, Notification, Tables};
use crate::inbox::StorageError;
use crate::message::Message;

/// A PostgreSQL database with the inbox and every handler's tables.
pub type Database = inbox_kit_runtime::postgres::Database<Handlers>;

/// Where the database is: the global options of every command.
pub type DatabaseOptions = inbox_kit_runtime::postgres::DatabaseOptions<Handlers>;

/// One connection's inbox: the runtime's, run on this project's tables.
pub type PgInbox = inbox_kit_runtime::postgres::PgInbox<Handlers, Database>;

/// What the runtime's database needs of this project.
impl PgProject for Handlers {
    const TABLES: &str = tables::TABLES;
    type Tables<'t> = dyn Tables + 't;
    type Notice = Notification;
    type Queue = OutboxQueue<Notification>;

    fn on_tables<T>(
        tx: &mut Transaction<'_>,
        work: impl FnOnce(&mut (dyn Tables + '_)) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let statements = TableStatements::prepare(tx)?;
        work(&mut PgTables::new(tx, &statements))
    }

    fn relay_queue(connection: Pipelined) -> Result<Self::Queue, StorageError> {
        OutboxQueue::new(connection)
    }
}

/// A row of the `notifications` outbox (`tables.rs`) as the relay sends
/// it.
impl OutboxRow for Notification {
    fn outbox_key(&self) -> (&str, &str) {
        (&self.event_id, &self.channel)
    }

    fn from_row(row: &Row) -> Self {
        Notification {
            event_id: row.get("event_id"),
            channel: row.get("channel"),
            account: row.get("account"),
            body: row.get("body"),
            trace_parent: row.get("trace_parent"),
        }
    }
}

/// How the runtime's inbox hands a delivery to this project's handlers:
/// on [`PgTables`] over the delivery's transaction, with the tables'
/// statements prepared once per connection.
impl PgHandlers for Handlers {
    type Statements = TableStatements;

    fn prepare(client: &mut Pipelined) -> Result<TableStatements, StorageError> {
        TableStatements::prepare(client)
    }

    fn apply(
        handler: &BorrowedHandler<'_>,
        tx: &mut Pipelined,
        statements: &TableStatements,
        message: &Message,
    ) -> Result<(), HandlerError> {
        handler.apply(&mut PgTables::new(tx, statements), message)
    }

    fn apply_all(
        handler: &BorrowedHandler<'_>,
        tx: &mut Pipelined,
        statements: &TableStatements,
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        let tables = &mut PgTables::new(tx, statements);
        match handler.set_based() {
            Some(set_based) => set_based.apply_all(tables, messages),
            None => messages
                .iter()
                .try_for_each(|message| handler.apply(tables, message)),
        }
    }
}
