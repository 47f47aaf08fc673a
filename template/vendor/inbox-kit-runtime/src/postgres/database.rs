//! The database: a PostgreSQL server, shared by any number of consumer
//! processes, with the inbox's tables and a project's in one schema.
//!
//! [`Database`] is cheap to share; each worker opens its own connection
//! with [`Store::inbox`] and keeps it for the whole run (a pool would add
//! nothing: a worker never gives its connection back). Handlers stay plain
//! synchronous functions on the workers' own threads: one-off work uses
//! the synchronous `postgres` crate, and the inbox's connection
//! ([`Pipelined`], over tokio-postgres) sends the statements whose answer
//! nobody waits for along with the next one. Every table lives in one
//! schema (`--schema`, default `public`), so several consumers, or tests,
//! can share a server without seeing each other. What a project hands it
//! is [`PgProject`]: its tables' SQL, the object its handlers see them as,
//! and its outbox's queue.

use std::time::Duration;

use postgres::{Client, NoTls, Transaction};

use super::{Connect, Exec, PgHandlers, PgInbox, Pipelined, SCHEMA as INBOX_SCHEMA, retention};
use crate::inbox::Policy;
use crate::metrics::{Backlog, Watched};
use crate::relay::{Notice, Queue};
use crate::storage::{StorageError, StorageFault};
use crate::store::{
    DEAD_LETTERS_PER_CONSUMER, INBOX_ROWS_PER_CONSUMER, Purged, Store, UNSENT_NOTIFICATIONS,
    tables_missing,
};

/// What a project hands the PostgreSQL database beyond running its
/// handlers ([`PgHandlers`]): a few lines of its `src/postgres/mod.rs`.
pub trait PgProject: PgHandlers {
    /// The handlers' tables (`CREATE TABLE IF NOT EXISTS ...`, columns
    /// added with `ADD COLUMN IF NOT EXISTS`), created after the inbox's
    /// own ([`INBOX_SCHEMA`]), in the same transaction. Its outbox is a
    /// table named `notifications` (see [`crate::store`]).
    const TABLES: &'static str;

    /// The handlers' tables as one object (`dyn Tables + 't`).
    type Tables<'t>: ?Sized;

    /// A row of the outbox, as the relay sends it.
    type Notice: Notice;

    /// The outbox as the relay takes it.
    type Queue: Queue<Self::Notice> + 'static;

    /// Runs `work` on the tables over `tx`, preparing what they need on it.
    fn on_tables<T>(
        tx: &mut Transaction<'_>,
        work: impl FnOnce(&mut Self::Tables<'_>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError>;

    /// The outbox's queue on a relay's own connection.
    fn relay_queue(connection: Pipelined) -> Result<Self::Queue, StorageError>;
}

/// Log directives that cap the database driver, whatever `RUST_LOG` says:
/// its debug and trace output carries every query parameter (message ids,
/// payloads), which must not reach the logs.
///
/// A directive's target matches every target that *starts with* it, so
/// `postgres=info` would also cap this crate whenever its name starts with
/// "postgres" (`postgres-consumer`): the `postgres` crate is named by the
/// one module it logs from.
pub const QUIET_LOGS: [&str; 2] = ["tokio_postgres=info", "postgres::config=info"];

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

/// A PostgreSQL database with the inbox and every handler of `P`'s tables.
pub struct Database<P> {
    url: String,
    settings: Settings,
    project: std::marker::PhantomData<fn() -> P>,
}

impl<P> Clone for Database<P> {
    fn clone(&self) -> Self {
        Self {
            url: self.url.clone(),
            settings: self.settings.clone(),
            project: self.project,
        }
    }
}

impl<P: PgProject> std::fmt::Debug for Database<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (schema {})", self.describe(), self.settings.schema)
    }
}

impl<P: PgProject> Database<P> {
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
            project: std::marker::PhantomData,
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
        tx.batch_execute(P::TABLES)?;
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

impl<P: PgProject> Store for Database<P> {
    type Registry = P;
    type Tables<'t> = P::Tables<'t>;
    type Notice = P::Notice;
    type Inbox = PgInbox<P, Self>;
    type RelayQueue = P::Queue;

    fn inbox(&self, policy: Policy) -> Result<Self::Inbox, StorageError> {
        PgInbox::new(self.clone(), policy)
    }

    fn relay_queue(&self) -> Result<P::Queue, StorageError> {
        P::relay_queue(self.connect_pipelined()?)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut P::Tables<'_>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut client = self.connect()?;
        let mut tx = client.transaction()?;
        let result = P::on_tables(&mut tx, work)?;
        tx.commit()?;
        Ok(result)
    }

    fn execute_script(&self, sql: &str) -> Result<(), StorageError> {
        let mut client = self.connect()?;
        let mut tx = client.transaction()?;
        tx.batch_execute(sql)?;
        Ok(tx.commit()?)
    }

    fn inbox_rows(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let mut client = self.connect()?;
        let rows = client.query(INBOX_ROWS_PER_CONSUMER, &[])?;
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

impl<P: PgProject> Watched for Database<P> {
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
        Ok([INBOX_SCHEMA, P::TABLES]
            .into_iter()
            .flat_map(|schema| tables_missing(schema, &present))
            .collect())
    }
}

/// Where the runtime's inbox gets its connections.
impl<P: PgProject> Connect for Database<P> {
    fn inbox_connection(&self) -> Result<Pipelined, StorageError> {
        self.connect_pipelined()
    }
}

#[cfg(all(test, feature = "cli"))]
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
