//! The database: a PostgreSQL server, shared by any number of consumer
//! processes.
//!
//! [`Database`] is cheap to share; each worker opens its own connection
//! with [`Store::inbox`] and keeps it for the whole run (a pool would add
//! nothing: a worker never gives its connection back). Handlers stay plain
//! synchronous functions on the workers' own threads, as on every
//! database: one-off work uses the synchronous `postgres` crate, and the
//! inbox's connection ([`Pipelined`], over tokio-postgres) sends the
//! statements whose answer nobody waits for along with the next one. Every
//! table lives in one schema
//! (`--schema`, default `public`), so several consumers, or tests, can share
//! a server without seeing each other. The inbox itself, how a batch is
//! claimed, rolled back, counted and retried, and that connection are the
//! runtime's (`inbox_kit_runtime::postgres`); this module hands it the
//! tables and the connections.
//!
//! This module is the only place that knows the database is PostgreSQL:
//! the rest of the crate goes through [`Store`],
//! [`crate::handlers::Tables`] and [`crate::inbox::Inbox`].

mod options;
mod relay;
mod retention;
mod tables;

pub use inbox_kit_runtime::postgres::{CONFLICT_RETRIES, Exec, Pipelined, SCHEMA as INBOX_SCHEMA};
pub use options::DatabaseOptions;
pub use relay::PgQueue;
pub use tables::{PgTables, TableStatements};

use std::time::Duration;

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::postgres::{Connect, PgHandlers};
use postgres::{Client, NoTls};

use crate::handlers::{BorrowedHandler, Handlers, Tables};
use crate::inbox::{Policy, StorageError, StorageFault};
use crate::message::Message;
use crate::store::{
    Backlog, DEAD_LETTERS_PER_CONSUMER, Purged, Store, UNSENT_NOTIFICATIONS, Watched,
    tables_missing,
};

/// Log directives that cap the database driver, whatever `RUST_LOG` says:
/// its debug and trace output carries every query parameter (message ids,
/// payloads), which must not reach the logs.
///
/// A directive's target matches every target that *starts with* it, so
/// `postgres=info` would also cap this crate whenever its name starts with
/// "postgres" (`postgres-consumer`): the `postgres` crate is named by the
/// one module it logs from.
pub const QUIET_LOGS: [&str; 2] = ["tokio_postgres=info", "postgres::config=info"];

/// One connection's inbox: the runtime's, run on this project's tables.
/// Open it with [`Store::inbox`].
pub type PgInbox = inbox_kit_runtime::postgres::PgInbox<Handlers, Database>;

/// The handlers' tables; the inbox's own are the runtime's
/// ([`INBOX_SCHEMA`]), created first.
const SCHEMA: &str = include_str!("schema.sql");

/// How long a health check waits for the server before calling it
/// unreachable.
const HEALTH_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Held while the tables are created, so that consumers starting at the
/// same moment do not race each other's `CREATE TABLE IF NOT EXISTS`.
const MIGRATION_LOCK: i64 = 0x1b0c_4b17;

/// Where the tables are.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The schema holding every table of this consumer (created if missing).
    pub schema: String,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            schema: "public".to_owned(),
        }
    }
}

/// A PostgreSQL database with the inbox and every handler's tables.
#[derive(Clone)]
pub struct Database {
    url: String,
    settings: Settings,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (schema {})", self.describe(), self.settings.schema)
    }
}

impl Database {
    /// Connects and creates the schema and the tables that are missing.
    pub fn open(url: impl Into<String>, settings: Settings) -> Result<Self, StorageError> {
        let database = Self::new(url, settings);
        database.migrate()?;
        Ok(database)
    }

    /// Refers to a database whose tables are in place; connects to nothing
    /// until a connection is opened.
    pub fn new(url: impl Into<String>, settings: Settings) -> Self {
        Self {
            url: url.into(),
            settings,
        }
    }

    /// Creates the schema and every missing table, in one transaction that
    /// holds an advisory lock, so that it is safe for several processes to
    /// do it at once.
    pub fn migrate(&self) -> Result<(), StorageError> {
        let mut client = self.connect()?;
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        // Identifiers cannot be bound parameters: let the server quote it.
        let create_schema: String = tx
            .query_one(
                "SELECT format('CREATE SCHEMA IF NOT EXISTS %I', $1::text)",
                &[&self.settings.schema],
            )?
            .get(0);
        tx.batch_execute(&create_schema)?;
        tx.batch_execute(INBOX_SCHEMA)?;
        tx.batch_execute(SCHEMA)?;
        Ok(tx.commit()?)
    }

    /// Whether the inbox table exists in the schema.
    pub fn has_tables(&self) -> Result<bool, StorageError> {
        let mut client = self.connect()?;
        let found: Option<String> = client
            .query_one("SELECT to_regclass('inbox')::text", &[])?
            .get(0);
        Ok(found.is_some())
    }

    /// Runs `sql` (statements separated by `;`) in one transaction, in the
    /// schema: all of them or, when one fails, none.
    pub fn execute_script(&self, sql: &str) -> Result<(), StorageError> {
        let mut client = self.connect()?;
        let mut tx = client.transaction()?;
        tx.batch_execute(sql)?;
        Ok(tx.commit()?)
    }

    /// A new connection whose `search_path` is the schema.
    pub fn connect(&self) -> Result<Client, StorageError> {
        let mut client = postgres::Config::from(self.config()?).connect(NoTls)?;
        self.use_schema(&mut client)?;
        Ok(client)
    }

    /// A new pipelined connection (the inbox's) whose `search_path` is the
    /// schema.
    pub fn connect_pipelined(&self) -> Result<Pipelined, StorageError> {
        let mut connection = Pipelined::connect(&self.config()?)?;
        self.use_schema(&mut connection)?;
        Ok(connection)
    }

    fn config(&self) -> Result<tokio_postgres::Config, StorageError> {
        self.url.parse().map_err(|_| {
            // The parser's message may quote the string, password included.
            StorageError::new(
                StorageFault::Other,
                "DATABASE_URL is not a valid PostgreSQL connection string",
            )
        })
    }

    fn use_schema(&self, connection: &mut impl Exec) -> Result<(), StorageError> {
        connection.execute(
            "SELECT set_config('search_path', $1, false)",
            &[&self.settings.schema],
        )?;
        Ok(())
    }

    /// The server, user and database, never the password: safe for logs
    /// and error messages.
    pub fn describe(&self) -> String {
        let Ok(config) = self.url.parse::<postgres::Config>() else {
            return "an unparsable DATABASE_URL".to_owned();
        };
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(host)) => host.clone(),
            #[cfg(unix)]
            Some(postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_owned(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        format!(
            "postgres://{}@{host}:{port}/{}",
            config.get_user().unwrap_or(""),
            config.get_dbname().unwrap_or("")
        )
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

impl Store for Database {
    type Inbox = PgInbox;
    type RelayQueue = PgQueue;

    fn inbox(&self, policy: Policy) -> Result<PgInbox, StorageError> {
        PgInbox::new(self.clone(), policy)
    }

    fn relay_queue(&self) -> Result<PgQueue, StorageError> {
        PgQueue::new(self.connect_pipelined()?)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut dyn Tables) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut client = self.connect()?;
        let statements = TableStatements::prepare(&mut client)?;
        let mut tx = client.transaction()?;
        let result = work(&mut PgTables::new(&mut tx, &statements))?;
        tx.commit()?;
        Ok(result)
    }

    fn inbox_rows(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let mut client = self.connect()?;
        let rows = client.query(
            "SELECT consumer, count(*) FROM inbox GROUP BY consumer ORDER BY consumer",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| (row.get(0), row.get::<_, i64>(1).unsigned_abs()))
            .collect())
    }

    fn purge(
        &self,
        older_than: Duration,
        batch_rows: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Purged, StorageError> {
        retention::purge(&mut self.connect()?, older_than, batch_rows, progress)
    }
}

impl Watched for Database {
    fn backlog(&self) -> Result<Backlog, StorageError> {
        let mut client = self.connect()?;
        let dead_letters = client
            .query(DEAD_LETTERS_PER_CONSUMER, &[])?
            .iter()
            .map(|row| (row.get(0), row.get::<_, i64>(1).unsigned_abs()))
            .collect();
        let unsent = client.query_one(UNSENT_NOTIFICATIONS, &[])?;
        Ok(Backlog {
            dead_letters,
            unsent: unsent.get::<_, i64>(0).unsigned_abs(),
            oldest_unsent_at: unsent.get(1),
        })
    }

    fn missing_tables(&self) -> Result<Vec<String>, StorageError> {
        let mut config = postgres::Config::from(self.config()?);
        config.connect_timeout(HEALTH_CHECK_TIMEOUT);
        let mut client = config.connect(NoTls)?;
        self.use_schema(&mut client)?;
        let present: Vec<String> = client
            .query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
                &[],
            )?
            .iter()
            .map(|row| row.get(0))
            .collect();
        Ok([INBOX_SCHEMA, SCHEMA]
            .into_iter()
            .flat_map(|schema| tables_missing(schema, &present))
            .collect())
    }
}

/// Where the runtime's inbox gets its connections.
impl Connect for Database {
    fn inbox_connection(&self) -> Result<Pipelined, StorageError> {
        self.connect_pipelined()
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

#[cfg(test)]
mod tests {
    use tracing::Level;
    use tracing_subscriber::EnvFilter;

    use super::QUIET_LOGS;

    #[test]
    fn the_driver_is_capped_and_this_crate_is_not() {
        let mut filter = EnvFilter::new("trace");
        for quiet in QUIET_LOGS {
            filter = filter.add_directive(quiet.parse().expect("a valid directive"));
        }
        let subscriber = tracing_subscriber::fmt().with_env_filter(filter).finish();
        tracing::subscriber::with_default(subscriber, || {
            assert!(
                tracing::enabled!(Level::TRACE),
                "{} is capped",
                module_path!()
            );
            assert!(!tracing::enabled!(target: "tokio_postgres::query", Level::DEBUG));
            assert!(!tracing::enabled!(target: "postgres::config", Level::DEBUG));
        });
    }
}
