//! What the runtime's commands need of a project: [`Consumer`], its
//! database and handlers, implemented once in the project's `main`.

use std::sync::Arc;

use crate::handler::{BadConsumers, Registry};
use crate::store::Store;

/// A project as its command line sees it.
pub trait Consumer: 'static {
    /// The project's database.
    type Store: Store;

    /// Where the database is: the global options of every command.
    type Options: OpenStore<Store = Self::Store> + clap::Args;

    /// The project's name: the default durable consumer (NATS) or
    /// consumer group (Kafka), shared by its processes.
    const NAME: &'static str;

    /// Worker threads unless `--workers` says otherwise (the project's
    /// generation option).
    const WORKERS: u16;

    /// The project's handlers with these consumer names, in the order
    /// given; all of them for none.
    fn select(names: &[String]) -> Result<Vec<Arc<HandlerOf<Self>>>, BadConsumers>;
}

/// A handler of consumer `C`, as the pipeline holds it.
pub type HandlerOf<C> = <<<C as Consumer>::Store as Store>::Registry as Registry>::Handler<'static>;

/// A database's command-line options, opening it.
pub trait OpenStore {
    /// The database they open.
    type Store: Store;

    /// Opens the database with all its tables, creating what is missing.
    fn open(&self) -> anyhow::Result<Self::Store>;

    /// Like [`OpenStore::open`], for commands that only make sense on a
    /// database that exists: a mistyped location must not quietly create
    /// an empty one.
    fn open_existing(&self) -> anyhow::Result<Self::Store>;

    /// Why `workers` workers cannot run with these options, if they cannot.
    fn refuse_workers(&self, workers: u16) -> Option<String>;
}
