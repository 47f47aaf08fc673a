//! The database: one SQLite file, in WAL mode.
//!
//! [`Database`] is cheap to share; each worker opens its own connection
//! with [`Store::inbox`]. All connections see one file, so SQLite's
//! single-writer lock is what workers contend for; every transaction that
//! writes begins with `BEGIN IMMEDIATE`. The inbox itself, how a delivery
//! is claimed, rolled back and counted, is the runtime's
//! (`inbox_kit_runtime::sqlite`); this module hands it the tables.
//!
//! This module is the only place that knows the database is SQLite: the
//! rest of the crate goes through [`Store`], [`crate::handlers::Tables`]
//! and [`crate::inbox::Inbox`].

mod options;
mod relay;
mod retention;
mod tables;

pub use crate::defaults::Durability;
pub use options::DatabaseOptions;
pub use relay::SqliteQueue;
pub use tables::SqliteTables;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::sqlite::{SCHEMA as INBOX_SCHEMA, SqliteHandlers};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::handlers::{BorrowedHandler, Handlers, Tables};
use crate::inbox::{Policy, StorageError};
use crate::message::Message;
use crate::store::{
    Backlog, DEAD_LETTERS_PER_CONSUMER, Purged, Store, UNSENT_NOTIFICATIONS, Watched,
    tables_missing,
};

/// One connection's inbox: the runtime's, run on this project's tables.
/// Open it with [`Store::inbox`].
pub type SqliteInbox = inbox_kit_runtime::sqlite::SqliteInbox<Handlers>;

/// Log directives that cap the database driver, whatever `RUST_LOG` says:
/// none, rusqlite does not log.
pub const QUIET_LOGS: [&str; 0] = [];

/// The handlers' tables; the inbox's own are the runtime's
/// ([`INBOX_SCHEMA`]), created first.
const SCHEMA: &str = include_str!("schema.sql");

/// Columns added to a table of [`SCHEMA`] after it first shipped: table,
/// column, declaration. SQLite has no `ADD COLUMN IF NOT EXISTS`, so a
/// database made before them gets each one that it lacks.
const ADDED_COLUMNS: [(&str, &str, &str); 1] = [("notifications", "trace_parent", "TEXT")];

/// SQLite's `synchronous` setting for a durability.
fn synchronous(durability: Durability) -> &'static str {
    match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    }
}

/// Connection settings shared by every worker.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub durability: Durability,
    /// How long a connection waits for the write lock before the batch fails
    /// as a storage error (not as a failure of the message).
    pub lock_wait: Duration,
    /// Hold SQLite's file lock from the first write until the connection
    /// closes (`locking_mode=EXCLUSIVE`), instead of taking and releasing
    /// it around every transaction. Saves several system calls per
    /// transaction; in exchange no other connection, in this process or
    /// another, can use the database meanwhile. Only for a single worker.
    pub exclusive: bool,
}

impl Default for Settings {
    /// The settings this project was generated with (`src/defaults.rs`).
    fn default() -> Self {
        Self {
            durability: crate::defaults::DURABILITY,
            lock_wait: Duration::from_secs(10),
            exclusive: false,
        }
    }
}

/// A database file with the inbox and every handler's tables.
#[derive(Clone, Debug)]
pub struct Database {
    path: PathBuf,
    settings: Settings,
}

impl Database {
    /// Opens (creating if needed) the database and its schema.
    pub fn open(path: impl AsRef<Path>, settings: Settings) -> Result<Self, StorageError> {
        let database = Self::new(path, settings);
        database.create_schema()?;
        Ok(database)
    }

    /// Refers to a database whose schema is already in place; touches
    /// nothing until a connection is opened.
    pub fn new(path: impl AsRef<Path>, settings: Settings) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            settings,
        }
    }

    /// Switches the file to WAL and creates the tables that are missing.
    pub fn create_schema(&self) -> Result<(), StorageError> {
        let mut db = self.connect()?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(INBOX_SCHEMA)?;
        tx.execute_batch(SCHEMA)?;
        for (table, column, declaration) in ADDED_COLUMNS {
            let present: bool = tx.query_row(
                "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
                [table, column],
                |row| row.get(0),
            )?;
            if !present {
                tx.execute_batch(&format!(
                    "ALTER TABLE {table} ADD COLUMN {column} {declaration}"
                ))?;
            }
        }
        Ok(tx.commit()?)
    }

    /// Runs `sql` (statements separated by `;`) in one transaction: all of
    /// them or, when one fails, none.
    pub fn execute_script(&self, sql: &str) -> Result<(), StorageError> {
        let mut db = self.connect()?;
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)?;
        Ok(tx.commit()?)
    }

    /// A new plain connection, configured like the workers' ones.
    pub fn connect(&self) -> Result<Connection, StorageError> {
        let mut db = Connection::open(&self.path)?;
        db.pragma_update(None, "synchronous", synchronous(self.settings.durability))?;
        // SQLite enforces foreign keys only when asked. Handlers' tables may
        // declare them, and the tests use a deferred one to make a COMMIT fail.
        db.pragma_update(None, "foreign_keys", "ON")?;
        wait_for_locks(&mut db, self.settings.lock_wait)?;
        if self.settings.exclusive {
            db.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        }
        Ok(db)
    }
}

impl Store for Database {
    type Inbox = SqliteInbox;
    type RelayQueue = SqliteQueue;

    fn inbox(&self, policy: Policy) -> Result<SqliteInbox, StorageError> {
        Ok(SqliteInbox::new(self.connect()?, policy))
    }

    fn relay_queue(&self) -> Result<SqliteQueue, StorageError> {
        SqliteQueue::open(self.connect()?, &self.path)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut dyn Tables) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut db = self.connect()?;
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let result = work(&mut SqliteTables::new(&tx))?;
        tx.commit()?;
        Ok(result)
    }

    fn inbox_rows(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let db = self.connect()?;
        let mut per_consumer =
            db.prepare("SELECT consumer, count(*) FROM inbox GROUP BY consumer ORDER BY consumer")?;
        let rows = per_consumer.query_map([], |row| {
            Ok((row.get(0)?, row.get::<_, i64>(1)?.unsigned_abs()))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
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
        let db = self.connect()?;
        let dead_letters = db
            .prepare(DEAD_LETTERS_PER_CONSUMER)?
            .query_map([], |row| {
                Ok((row.get(0)?, row.get::<_, i64>(1)?.unsigned_abs()))
            })?
            .collect::<Result<_, _>>()?;
        let (unsent, oldest_unsent_at) = db.query_row(UNSENT_NOTIFICATIONS, [], |row| {
            Ok((row.get::<_, i64>(0)?.unsigned_abs(), row.get(1)?))
        })?;
        Ok(Backlog {
            dead_letters,
            unsent,
            oldest_unsent_at,
        })
    }

    fn missing_tables(&self) -> Result<Vec<String>, StorageError> {
        // Read-only: a health check must not create the file it looks for.
        let db = Connection::open_with_flags(&self.path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let present: Vec<String> = db
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        Ok([INBOX_SCHEMA, SCHEMA]
            .into_iter()
            .flat_map(|schema| tables_missing(schema, &present))
            .collect())
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

/// Installs a busy handler that retries a contended lock for up to
/// `patience`.
///
/// A waiter sleeps 25 us, then 50 us, growing by 25 us per retry up to
/// 0.5 ms. SQLite's own `busy_timeout` sleeps 1, 2, 5, 10... up to 100 ms,
/// so a waiter often sleeps long after the lock is free; yielding instead
/// of sleeping is worse still when workers outnumber cores, because the
/// spinning waiters steal the CPU the lock holder needs to finish. Measured
/// on the 4 x 50 parallel scenario (2 cores): median 7.1 ms with this
/// handler, 7.6 ms (p99 23 ms) with `busy_timeout`, 9.1 ms yielding first.
fn wait_for_locks(db: &mut Connection, patience: Duration) -> rusqlite::Result<()> {
    let mut started = Instant::now();
    db.busy_handler(Some(move |attempt: i32| {
        if attempt == 0 {
            started = Instant::now();
        }
        if started.elapsed() >= patience {
            return false;
        }
        let steps = u64::try_from(attempt).unwrap_or(0).min(19) + 1;
        std::thread::sleep(Duration::from_micros(25 * steps));
        true
    }))
}
