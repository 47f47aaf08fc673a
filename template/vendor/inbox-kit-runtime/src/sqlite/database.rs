//! The database: one SQLite file, in WAL mode, with the inbox's tables
//! and a project's.
//!
//! [`Database`] is cheap to share; each worker opens its own connection
//! with [`Store::inbox`]. All connections see one file, so SQLite's
//! single-writer lock is what workers contend for; every transaction that
//! writes begins with `BEGIN IMMEDIATE`. What a project hands it is
//! [`SqliteProject`]: its tables' SQL, the object its handlers see them
//! as, and its outbox's queue.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{SCHEMA as INBOX_SCHEMA, SqliteHandlers, SqliteInbox, retention};
use crate::inbox::Policy;
use crate::metrics::{Backlog, Watched};
use crate::relay::{Notice, Queue};
use crate::storage::StorageError;
use crate::store::{
    DEAD_LETTERS_PER_CONSUMER, INBOX_ROWS_PER_CONSUMER, Purged, Store, UNSENT_NOTIFICATIONS,
    tables_missing,
};

/// What a project hands the SQLite database beyond running its handlers
/// ([`SqliteHandlers`]): a few lines of its `src/sqlite/mod.rs`.
pub trait SqliteProject: SqliteHandlers {
    /// The handlers' tables (`CREATE TABLE IF NOT EXISTS ...`), created
    /// after the inbox's own ([`INBOX_SCHEMA`]), in the same transaction.
    /// Its outbox is a table named `notifications` (see [`crate::store`]).
    const TABLES: &'static str;

    /// Columns added to a table of [`SqliteProject::TABLES`] after it
    /// first shipped: table, column, declaration. SQLite has no `ADD
    /// COLUMN IF NOT EXISTS`, so a database made before them gets each one
    /// that it lacks.
    const ADDED_COLUMNS: &'static [(&'static str, &'static str, &'static str)] = &[];

    /// How hard commits are pushed to disk unless told otherwise (the
    /// project's generation option).
    const DURABILITY: Durability = Durability::Normal;

    /// The handlers' tables as one object (`dyn Tables + 't`).
    type Tables<'t>: ?Sized;

    /// A row of the outbox, as the relay sends it.
    type Notice: Notice;

    /// The outbox as the relay takes it.
    type Queue: Queue<Self::Notice> + 'static;

    /// Runs `work` on the tables over `db` (inside a transaction the
    /// caller holds).
    fn on_tables<T>(db: &Connection, work: impl FnOnce(&mut Self::Tables<'_>) -> T) -> T;

    /// The outbox's queue on `db`, the connection of the relay of the
    /// database file at `path`.
    fn relay_queue(db: Connection, path: &Path) -> Result<Self::Queue, StorageError>;
}

/// Log directives that cap the database driver, whatever `RUST_LOG` says:
/// none, rusqlite does not log.
pub const QUIET_LOGS: [&str; 0] = [];

/// How hard SQLite pushes each commit to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Durability {
    /// `synchronous=NORMAL`: fast; survives a crash of this process, but a
    /// power loss can undo the last commits.
    Normal,
    /// `synchronous=FULL`: every commit is on disk before it counts.
    Full,
}

impl Durability {
    /// SQLite's `synchronous` setting for it.
    fn synchronous(self) -> &'static str {
        match self {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        }
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
    fn default() -> Self {
        Self {
            durability: Durability::Normal,
            lock_wait: Duration::from_secs(10),
            exclusive: false,
        }
    }
}

/// A database file with the inbox and every handler of `P`'s tables.
pub struct Database<P> {
    path: PathBuf,
    settings: Settings,
    project: std::marker::PhantomData<fn() -> P>,
}

impl<P> Clone for Database<P> {
    fn clone(&self) -> Self {
        Self {
            path: self.path.clone(),
            settings: self.settings,
            project: self.project,
        }
    }
}

impl<P> std::fmt::Debug for Database<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?})", self.path.display(), self.settings)
    }
}

impl<P: SqliteProject> Database<P> {
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
            project: std::marker::PhantomData,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Switches the file to WAL and creates the tables that are missing.
    pub fn create_schema(&self) -> Result<(), StorageError> {
        let mut db = self.connect()?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(INBOX_SCHEMA)?;
        tx.execute_batch(P::TABLES)?;
        for (table, column, declaration) in P::ADDED_COLUMNS {
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

    /// A new plain connection, configured like the workers' ones.
    pub fn connect(&self) -> Result<Connection, StorageError> {
        let mut db = Connection::open(&self.path)?;
        db.pragma_update(None, "synchronous", self.settings.durability.synchronous())?;
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

impl<P: SqliteProject> Store for Database<P> {
    type Registry = P;
    type Tables<'t> = P::Tables<'t>;
    type Notice = P::Notice;
    type Inbox = SqliteInbox<P>;
    type RelayQueue = P::Queue;

    fn inbox(&self, policy: Policy) -> Result<SqliteInbox<P>, StorageError> {
        Ok(SqliteInbox::new(self.connect()?, policy))
    }

    fn relay_queue(&self) -> Result<P::Queue, StorageError> {
        P::relay_queue(self.connect()?, &self.path)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut P::Tables<'_>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut db = self.connect()?;
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let result = P::on_tables(&tx, work)?;
        tx.commit()?;
        Ok(result)
    }

    fn execute_script(&self, sql: &str) -> Result<(), StorageError> {
        let mut db = self.connect()?;
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(sql)?;
        Ok(tx.commit()?)
    }

    fn inbox_rows(&self) -> Result<Vec<(String, u64)>, StorageError> {
        let db = self.connect()?;
        let mut per_consumer = db.prepare(INBOX_ROWS_PER_CONSUMER)?;
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

impl<P: SqliteProject> Watched for Database<P> {
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
        Ok([INBOX_SCHEMA, P::TABLES]
            .into_iter()
            .flat_map(|schema| tables_missing(schema, &present))
            .collect())
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
