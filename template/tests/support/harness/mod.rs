//! The conformance harness: delivery schedules and the oracle that judges
//! them.
//!
//! The oracle is the definition of "effectively once": after any schedule
//! (duplicates, parallel workers, failures then redelivery, restarts), a
//! consumer's state must equal the state reached by applying each distinct
//! message exactly once to a fresh database, and the inbox must hold one
//! row per distinct message. A scenario returns `Err(Violation)` saying
//! what differed; the tests assert on that, and the teeth tests assert that
//! known-broken implementations produce one.
//!
//! To test a new handler, implement [`Subject`] for it (seed, messages,
//! state: a few lines, see `subjects.rs`) and call the scenarios the way
//! `tests/conformance/` does.

mod faults;
mod oracle;
mod scenarios;

pub use faults::{AlwaysFail, FailFirstAttempt};
pub use oracle::{Observed, Play, Violation, once_only_state};
pub use scenarios::*;

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

use {{crate_name}}::database::{Database, Settings};
use {{crate_name}}::handler::Handler;
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError};
use {{crate_name}}::message::Message;

/// A handler under test, with what the harness needs to judge it.
pub trait Subject: Sync {
    /// The part of the database the handler owns, read back for comparison.
    type State: PartialEq + Debug;

    fn handler(&self) -> Arc<dyn Handler>;
    /// Business state every scenario starts from (e.g. an account with 1,000).
    fn seed(&self, db: &Connection);
    /// `count` distinct messages the handler subscribes to.
    fn messages(&self, count: usize) -> Vec<Message>;
    /// Reads the handler's state.
    fn state(&self, db: &Connection) -> Self::State;
}

/// An inbox implementation under test: the real one, or a broken one.
pub trait InboxUnderTest: Sync {
    fn name(&self) -> String;
    /// Creates the database with its schema (the inbox's and the
    /// handlers'); the real schema unless an implementation needs its own.
    fn create(&self, path: &Path, handlers: &[Arc<dyn Handler>]) {
        Database::open(path, Settings::default(), handlers).expect("create database");
    }
    /// A new connection for one worker.
    fn open(&self, path: &Path) -> Box<dyn Inbox>;
}

/// The inbox this crate ships, delivering `batch_size` messages per
/// transaction and dead-lettering a message after `max_attempts` failures.
pub struct RealInbox {
    pub batch_size: usize,
    pub max_attempts: u32,
}

impl RealInbox {
    pub const ONE_PER_TRANSACTION: Self = Self {
        batch_size: 1,
        max_attempts: 5,
    };
    pub const BATCHED: Self = Self {
        batch_size: 16,
        max_attempts: 5,
    };
    /// Both ways of running the real inbox; the required tests use each.
    pub const ALL: [Self; 2] = [Self::ONE_PER_TRANSACTION, Self::BATCHED];

    fn settings(&self) -> Settings {
        Settings {
            max_attempts: self.max_attempts,
            ..Settings::default()
        }
    }
}

impl InboxUnderTest for RealInbox {
    fn name(&self) -> String {
        format!("real inbox, batches of {}", self.batch_size)
    }

    fn create(&self, path: &Path, handlers: &[Arc<dyn Handler>]) {
        Database::open(path, self.settings(), handlers).expect("create database");
    }

    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        Box::new(Batching {
            inner: Database::new(path, self.settings())
                .inbox()
                .expect("open inbox"),
            batch_size: self.batch_size,
        })
    }
}

/// Splits whatever it is given into transactions of `batch_size`.
struct Batching<I> {
    inner: I,
    batch_size: usize,
}

impl<I: Inbox> Inbox for Batching<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(self.batch_size) {
            outcomes.extend(self.inner.deliver_batch(chunk)?);
        }
        Ok(outcomes)
    }
}

/// A fresh database in its own temporary folder, seeded for its subjects.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Fixture {
    pub fn new(inbox: &dyn InboxUnderTest, subjects: &[&dyn Seed]) -> Self {
        let dir = tempfile::tempdir_in(scratch_folder()).expect("temporary folder");
        let path = dir.path().join("consumer.db");
        let handlers: Vec<_> = subjects.iter().map(|s| s.seed_handler()).collect();
        inbox.create(&path, &handlers);
        let db = Connection::open(&path).expect("open for seeding");
        for subject in subjects {
            subject.seed_state(&db);
        }
        Self { _dir: dir, path }
    }

    pub fn connection(&self) -> Connection {
        Connection::open(&self.path).expect("open for reading")
    }
}

/// Inbox rows recorded for `consumer`.
pub fn inbox_rows(db: &Connection, consumer: &str) -> usize {
    let rows: i64 = db
        .query_row(
            "SELECT count(*) FROM inbox WHERE consumer = ?1",
            [consumer],
            |row| row.get(0),
        )
        .expect("count inbox rows");
    usize::try_from(rows).expect("a count is never negative")
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

/// The part of a [`Subject`] that set-up needs, without its state type, so
/// that subjects of different types can share one fixture.
pub trait Seed {
    fn seed_handler(&self) -> Arc<dyn Handler>;
    fn seed_state(&self, db: &Connection);
}

impl<S: Subject> Seed for S {
    fn seed_handler(&self) -> Arc<dyn Handler> {
        self.handler()
    }
    fn seed_state(&self, db: &Connection) {
        self.seed(db)
    }
}
