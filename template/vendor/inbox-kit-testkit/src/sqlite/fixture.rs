//! Fresh SQLite databases for scenarios, each a file in a temporary
//! folder (the ways to make them fail on demand are in `tripwires.rs`).

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::inbox::{DeadLetter, Policy};
use inbox_kit_runtime::sqlite::{Database, Settings, SqliteProject};
use inbox_kit_runtime::storage::StorageError;
use inbox_kit_runtime::store::{Purged, Store};
use rusqlite::{Connection, TransactionBehavior};

use super::{SqliteRaw, tripwires};
use crate::harness::{self, LettersOf, Project, Raw};

/// A project whose fixture is SQLite's: its registry is its database's
/// project, and hands its handlers the same tables (a line in the project,
/// the bound below written once).
pub trait SqliteTest:
    Project<Registry: for<'t> SqliteProject<Tables<'t> = <Self as Project>::Tables<'t>>>
{
}

impl<P> SqliteTest for P where
    P: Project<Registry: for<'t> SqliteProject<Tables<'t> = <P as Project>::Tables<'t>>>
{
}

/// A fresh database with every table of project `P`, for one scenario.
pub struct SqliteFixture<P> {
    /// Deleted with the fixture; `None` for a fixture attached by another
    /// process, which belongs to the process that made it.
    _folder: Option<tempfile::TempDir>,
    path: PathBuf,
    /// The connection the harness reads state through, opened once.
    reader: Mutex<Option<Connection>>,
    project: PhantomData<fn() -> P>,
}

/// A fresh database as bytes: the consumer's tables (made by its own
/// migration) and the tripwires, built once per process (a test process
/// has one project). A fixture is a copy, which costs a fraction of
/// building the tables again.
static TEMPLATE: OnceLock<Vec<u8>> = OnceLock::new();

fn template<P: SqliteTest>() -> &'static [u8] {
    TEMPLATE.get_or_init(|| {
        let folder = tempfile::tempdir_in(scratch_folder()).expect("temporary folder");
        let path = folder.path().join("template.db");
        Database::<P::Registry>::open(&path, Settings::default()).expect("create the database");
        let db = Database::<P::Registry>::new(&path, Settings::default())
            .connect()
            .expect("connect");
        db.execute_batch(tripwires::TRIPWIRES).expect("tripwires");
        tripwires::arm_commit_tripwire(&db);
        // Closing the last connection moves the WAL into the file.
        drop(db);
        let wal = folder.path().join("template.db-wal");
        assert!(!wal.exists(), "the template's WAL was not checkpointed");
        std::fs::read(&path).expect("read the template database")
    })
}

/// This database taken away from a consumer and given back: the file is
/// moved aside (connections already open keep it; a new one finds nothing)
/// and moved back.
pub struct Outage {
    path: PathBuf,
    args: Vec<String>,
}

impl Outage {
    /// The consumer binary's options that point it at the database.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    pub fn begin(&self) {
        std::fs::rename(&self.path, self.aside()).expect("move the database aside");
    }

    pub fn end(&self) {
        std::fs::rename(self.aside(), &self.path).expect("move the database back");
    }

    fn aside(&self) -> PathBuf {
        self.path.with_extension("away")
    }
}

/// A fresh fixture, as [`SqliteFixture::new`] makes it.
impl<P: SqliteTest> Default for SqliteFixture<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: SqliteTest> SqliteFixture<P> {
    /// A new database file with the real schema.
    pub fn new() -> Self {
        let folder = tempfile::tempdir_in(scratch_folder()).expect("temporary folder");
        let path = folder.path().join("consumer.db");
        std::fs::write(&path, template::<P>()).expect("copy the template database");
        Self {
            _folder: Some(folder),
            path,
            reader: Mutex::new(None),
            project: PhantomData,
        }
    }

    /// A new database without the tripwires, for the benchmarks: what
    /// they measure is the consumer's own schema.
    pub fn without_tripwires() -> Self {
        let fixture = Self::new();
        tripwires::disarm(&fixture.database().connect().expect("connect"));
        fixture
    }

    /// Where the fixture is, for [`SqliteFixture::attach`] in another
    /// process.
    pub fn location(&self) -> String {
        self.path.display().to_string()
    }

    /// A name for this fixture that no other of this process has.
    pub fn identity(&self) -> String {
        self.location()
    }

    /// The fixture another process made, at `location`.
    pub fn attach(location: &str) -> Self {
        Self {
            _folder: None,
            path: PathBuf::from(location),
            reader: Mutex::new(None),
            project: PhantomData,
        }
    }

    /// The database, as the consumer opens it.
    pub fn database(&self) -> Database<P::Registry> {
        Database::new(&self.path, Settings::default())
    }

    /// The real inbox on this fixture, for one worker.
    pub fn inbox(&self, policy: Policy) -> LettersOf<P> {
        Box::new(self.database().inbox(policy).expect("open inbox"))
    }

    /// Every dead letter, oldest first.
    pub fn dead_letters(&self) -> Vec<DeadLetter> {
        self.inbox(Policy::default())
            .dead_letters()
            .expect("read the dead letters")
    }

    /// Failures counted for `consumer`, all messages together.
    pub fn failures_counted(&self, consumer: &str) -> u64 {
        let mut reader = self.reader.lock().expect("reader");
        let db = reader.get_or_insert_with(|| self.database().connect().expect("connect"));
        let failures: i64 = db
            .query_row(
                "SELECT coalesce(sum(failures), 0) FROM attempts WHERE consumer = ?1",
                [consumer],
                |row| row.get(0),
            )
            .expect("count failures");
        failures.unsigned_abs()
    }

    /// Failures counted so far for (consumer, id).
    pub fn failures(&self, consumer: &str, id: &str) -> u32 {
        self.inbox(Policy::default())
            .failures(consumer, id)
            .expect("read the attempts")
    }

    /// The consumer binary's options that point it at this database.
    pub fn cli_args(&self) -> Vec<String> {
        vec!["--db".into(), self.location()]
    }

    /// A way to take this database away from a consumer and give it back.
    pub fn outage(&self) -> Outage {
        Outage {
            path: self.path.clone(),
            args: self.cli_args(),
        }
    }

    /// What the consumer must never write to its logs: where the database
    /// is.
    pub fn secrets(&self) -> Vec<String> {
        vec![self.location()]
    }

    /// What SQLite's own consistency check finds wrong, if anything.
    pub fn integrity_problems(&self) -> Option<String> {
        let db = self.database().connect().expect("connect");
        let verdict: String = db
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("integrity check");
        (verdict != "ok").then_some(verdict)
    }

    /// A connection for hand-written inboxes.
    pub fn raw(&self) -> Box<dyn Raw<P>> {
        Box::new(SqliteRaw::new(self.database().connect().expect("connect")))
    }

    /// A connection for hand-written inboxes that waits for the write
    /// lock as long as it takes (SQLite's longest busy timeout, 24 days),
    /// as a consumer's own connection might.
    pub fn raw_waiting_forever(&self) -> Box<dyn Raw<P>> {
        let db = self.database().connect().expect("connect");
        db.busy_timeout(std::time::Duration::from_millis(i32::MAX as u64))
            .expect("wait without limit");
        Box::new(SqliteRaw::new(db))
    }

    /// Changes data with SQL statements (what a broken implementation
    /// deletes behind the real one's back).
    pub fn run_sql(&self, sql: &str) {
        self.execute(sql);
    }

    /// Runs SQL statements on the database (schema changes for traps).
    pub fn execute(&self, sql: &str) {
        let db = self.database().connect().expect("connect");
        db.execute_batch(sql)
            .unwrap_or_else(|error| panic!("{error}:\n{sql}"));
    }

    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed (to seed a fixture, or to read its state).
    pub fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut P::Tables<'_>) -> Result<T, StorageError>,
    ) -> T {
        let mut reader = self.reader.lock().expect("reader");
        let db = reader.get_or_insert_with(|| self.database().connect().expect("connect"));
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        let result = P::Registry::on_tables(&tx, work).expect("work on the tables");
        tx.commit().expect("commit");
        result
    }

    /// Inbox rows recorded for `consumer`.
    pub fn inbox_rows(&self, consumer: &str) -> usize {
        let mut reader = self.reader.lock().expect("reader");
        let db = reader.get_or_insert_with(|| self.database().connect().expect("connect"));
        let rows: i64 = db
            .query_row(
                "SELECT count(*) FROM inbox WHERE consumer = ?1",
                [consumer],
                |row| row.get(0),
            )
            .expect("count inbox rows");
        usize::try_from(rows).expect("a count is never negative")
    }

    /// Runs `work` on the tables of an empty database, in a transaction
    /// that is always rolled back: a fresh database for every call, without
    /// the cost of creating one. The database is in memory, one for the
    /// whole test process.
    pub fn scratch<T>(work: impl FnOnce(&mut Scratch<'_, '_, P>) -> T) -> T {
        static SCRATCH: Mutex<Option<Connection>> = Mutex::new(None);
        let mut scratch = SCRATCH
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let db = scratch.get_or_insert_with(|| {
            let db = Connection::open_in_memory().expect("in-memory database");
            db.execute_batch(<P::Registry as SqliteProject>::TABLES)
                .expect("create the tables");
            db
        });
        let mut tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        work(&mut Scratch {
            tx: &mut tx,
            project: PhantomData,
        })
    }
}

/// What the harness reads and sets off: the methods of the same names
/// above.
impl<P: SqliteTest> harness::Fixture<P> for SqliteFixture<P> {
    const CONCURRENT_WRITERS: bool = tripwires::CONCURRENT_WRITERS;

    fn new() -> Self {
        SqliteFixture::new()
    }

    fn location(&self) -> String {
        SqliteFixture::location(self)
    }

    fn attach(location: &str) -> Self {
        SqliteFixture::attach(location)
    }

    fn identity(&self) -> String {
        SqliteFixture::identity(self)
    }

    fn execute(&self, sql: &str) {
        SqliteFixture::execute(self, sql)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut P::Tables<'_>) -> Result<T, StorageError>,
    ) -> T {
        SqliteFixture::with_tables(self, work)
    }

    fn waiting_on_locks(&self) -> usize {
        SqliteFixture::waiting_on_locks(self)
    }

    fn inbox_rows(&self, consumer: &str) -> usize {
        SqliteFixture::inbox_rows(self, consumer)
    }

    fn dead_letters(&self) -> Vec<DeadLetter> {
        SqliteFixture::dead_letters(self)
    }

    fn failures_counted(&self, consumer: &str) -> u64 {
        SqliteFixture::failures_counted(self, consumer)
    }

    fn purge(
        &self,
        older_than: std::time::Duration,
        keys_per_transaction: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        let purged = self
            .database()
            .purge(older_than, keys_per_transaction, progress);
        purged.expect("purge")
    }

    fn raw(&self) -> Box<dyn Raw<P>> {
        SqliteFixture::raw(self)
    }

    fn raw_waiting_forever(&self) -> Box<dyn Raw<P>> {
        SqliteFixture::raw_waiting_forever(self)
    }

    fn inbox(&self, policy: Policy) -> LettersOf<P> {
        SqliteFixture::inbox(self, policy)
    }

    fn scratch<T>(work: impl FnOnce(&mut dyn harness::Scratch<P>) -> T) -> T {
        SqliteFixture::scratch(|scratch| work(scratch))
    }
}

/// A scratch database's tables, in a transaction that will be rolled back.
pub struct Scratch<'s, 'c, P> {
    tx: &'s mut rusqlite::Transaction<'c>,
    project: PhantomData<fn() -> P>,
}

impl<P: SqliteTest> Scratch<'_, '_, P> {
    /// Runs `step` under a savepoint: if it returns an error, what it wrote
    /// is rolled back and the rest stays.
    pub fn attempt<E>(
        &mut self,
        step: impl FnOnce(&mut P::Tables<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let savepoint = self.tx.savepoint().expect("savepoint");
        let result = P::Registry::on_tables(&savepoint, step);
        if result.is_ok() {
            savepoint.commit().expect("release the savepoint");
        }
        result
    }

    /// Reads (or writes) the tables as they stand.
    pub fn read<T>(&mut self, read: impl FnOnce(&mut P::Tables<'_>) -> T) -> T {
        P::Registry::on_tables(self.tx, read)
    }
}

/// The once-only route of the test kit's judge runs on it.
impl<P: SqliteTest> harness::Scratch<P> for Scratch<'_, '_, P> {
    fn attempt(
        &mut self,
        step: &mut dyn FnMut(&mut P::Tables<'_>) -> Result<(), HandlerError>,
    ) -> Result<(), HandlerError> {
        Scratch::attempt(self, step)
    }

    fn read(&mut self, read: &mut dyn FnMut(&mut P::Tables<'_>)) {
        Scratch::read(self, read)
    }
}

/// Where fixtures live: `INBOX_TEST_TMPDIR` if set, else `/dev/shm` when
/// the machine has it, else the system's temporary folder.
///
/// A fixture is thrown away after one scenario, so it has no reason to wait
/// for a disk: on a RAM-backed folder, creating and closing a database costs
/// no fsync, which makes the stress loop several times faster. SQLite's
/// locking (POSIX locks and the memory-mapped `-shm` file) works the same
/// there, so the races the tests look for are the same races.
pub fn scratch_folder() -> PathBuf {
    if let Some(folder) = std::env::var_os("INBOX_TEST_TMPDIR") {
        return PathBuf::from(folder);
    }
    let shm = Path::new("/dev/shm");
    let writable = shm.is_dir()
        && std::fs::metadata(shm).is_ok_and(|metadata| !metadata.permissions().readonly());
    if writable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}
