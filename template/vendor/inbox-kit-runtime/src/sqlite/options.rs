//! How a consumer's command line names its SQLite database: a file, and
//! how hard commits are pushed to disk (global options of every command).

use std::marker::PhantomData;
use std::path::PathBuf;

use anyhow::Context;

use crate::cli::consumer::OpenStore;

use super::{Database, Durability, Settings, SqliteProject};

/// Where the database of project `P` is (global options of every command).
#[derive(clap::Args)]
pub struct DatabaseOptions<P: SqliteProject> {
    /// SQLite database file (created if missing).
    #[arg(
        long,
        global = true,
        env = "CONSUMER_DB",
        default_value = "consumer.db"
    )]
    db: PathBuf,
    /// `normal`: fast commits that survive a crash of this process;
    /// `full`: every commit reaches the disk before it counts.
    #[arg(long, global = true, value_enum, default_value_t = P::DURABILITY)]
    durability: Durability,
    /// Keep the database locked for the whole run instead of locking it per
    /// transaction: about 1.4x faster with --batch-size 1, but nothing else
    /// (status, another consumer) can open the database until the run ends.
    /// Needs --workers 1.
    #[arg(long, global = true)]
    exclusive: bool,
    #[arg(skip)]
    project: PhantomData<fn() -> P>,
}

impl<P: SqliteProject> OpenStore for DatabaseOptions<P> {
    type Store = Database<P>;

    /// Opens the database with all its tables, creating it if needed.
    fn open(&self) -> anyhow::Result<Database<P>> {
        Database::open(&self.db, self.settings())
            .with_context(|| format!("could not open the database {}", self.db.display()))
    }

    /// Like [`DatabaseOptions::open`], for commands that only make sense on
    /// an existing database: a mistyped `--db` must not quietly create an
    /// empty one.
    fn open_existing(&self) -> anyhow::Result<Database<P>> {
        if !self.db.exists() {
            anyhow::bail!(
                "no database at {} (give its path with --db or CONSUMER_DB; `run`, `seed` and `migrate` create one)",
                self.db.display()
            );
        }
        self.open()
    }

    /// Why `workers` workers cannot run with these options, if they cannot.
    fn refuse_workers(&self, workers: u16) -> Option<String> {
        (self.exclusive && workers != 1).then(|| {
            format!(
                "--exclusive keeps the database to one connection: use it with --workers 1 (got {workers})"
            )
        })
    }
}

impl<P: SqliteProject> DatabaseOptions<P> {
    fn settings(&self) -> Settings {
        Settings {
            durability: self.durability,
            exclusive: self.exclusive,
            ..Settings::default()
        }
    }
}
