//! What the harness needs to know of a project: its events, its handlers,
//! the tables they are handed, and its database as a test fixture.
//!
//! A project's test support implements [`Project`] once, on a type of its
//! own, and [`Fixture`] on its database fixture. Everything generic in the
//! harness (the judge, the subjects' contract) is written against them, so
//! it lives here, in the kit, while the fixture's SQL stays the project's.

use inbox_kit_runtime::handler::{HandlerError, Subscriber};
use inbox_kit_runtime::inbox::DeadLetter;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

/// A project as its harness sees it.
pub trait Project: 'static {
    /// The project's events.
    type Event: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// One of its handlers, as its registry hands them out (a trait
    /// object over every table: `dyn for<'t> Handler<Event, dyn Tables + 't>`).
    type Handler: ?Sized + Subscriber<Self::Event> + 'static;
    /// Every handler's tables within one transaction (`dyn Tables + 't`).
    type Tables<'t>: ?Sized;
    /// A fresh database with every table, for one scenario.
    type Fixture: Fixture<Self>;

    /// Applies `message` through `handler` on `tables`.
    fn apply(
        handler: &Self::Handler,
        tables: &mut Self::Tables<'_>,
        message: &Message<Self::Event>,
    ) -> Result<(), HandlerError>;
}

/// A project's database as a test fixture: what the judge reads back.
pub trait Fixture<P: Project + ?Sized>: Sized {
    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed if `work` succeeds; panics on a storage error.
    fn with_tables<T>(&self, work: impl FnOnce(&mut P::Tables<'_>) -> Result<T, StorageError>)
    -> T;

    /// Inbox rows recorded for `consumer`.
    fn inbox_rows(&self, consumer: &str) -> usize;

    /// Every dead letter, refused ones included.
    fn dead_letters(&self) -> Vec<DeadLetter>;

    /// Failures counted for `consumer` and not yet dead-lettered.
    fn failures_counted(&self, consumer: &str) -> u64;

    /// Runs `work` on the tables of an empty database, in a transaction
    /// that is always rolled back: the once-only route's database.
    fn scratch<T>(work: impl FnOnce(&mut dyn Scratch<P>) -> T) -> T;
}

/// An empty database's tables, in a transaction that will be rolled back
/// ([`Fixture::scratch`]).
pub trait Scratch<P: Project + ?Sized> {
    /// Runs `step` under a savepoint: if it returns an error, what it wrote
    /// is rolled back and the rest stays.
    fn attempt(
        &mut self,
        step: &mut dyn FnMut(&mut P::Tables<'_>) -> Result<(), HandlerError>,
    ) -> Result<(), HandlerError>;

    /// Reads (or writes) the tables as they stand.
    fn read(&mut self, read: &mut dyn FnMut(&mut P::Tables<'_>));
}
