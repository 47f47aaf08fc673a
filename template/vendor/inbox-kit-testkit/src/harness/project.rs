//! What the harness needs to know of a project: its events, its handlers,
//! the tables they are handed, and its database as a test fixture.
//!
//! A project's test support implements [`Project`] once, on a type of its
//! own, and [`Fixture`] on its database fixture. Everything generic in the
//! harness (the judge, the subjects' contract) is written against them, so
//! it lives here, in the kit, while the fixture's SQL stays the project's.

use std::sync::Arc;

use inbox_kit_runtime::envelope::Wire;
use inbox_kit_runtime::handler::{Handler, HandlerError, Registry};
use inbox_kit_runtime::inbox::{DeadLetter, Policy};
use inbox_kit_runtime::storage::StorageError;

use super::inboxes::LettersOf;
use super::raw::Raw;
use super::tripwires::Tripwires;

/// A project as its harness sees it.
pub trait Project: Sized + 'static {
    /// The project's events.
    type Event: Wire + Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static;
    /// Every handler's tables within one transaction (`dyn Tables + 't`).
    type Tables<'t>: ?Sized;
    /// The project's registry, as the runtime's inboxes know it: its
    /// handlers are [`HandlerOf`] the project, each handed every table.
    type Registry: for<'a> Registry<Event = Self::Event, Handler<'a> = HandlerOf<'a, Self>>;
    /// A fresh database with every table, for one scenario.
    type Fixture: Fixture<Self>;

    /// Every consumer the project runs (its `handlers::all()`): a second
    /// process finds its consumer among them by name.
    fn handlers() -> Vec<Arc<AnyHandlerOf<Self>>>;
}

/// A handler of project `P`, borrowing for `'a`: handed every table of the
/// project, whatever the transaction's lifetime (a project's
/// `BorrowedHandler<'a>`).
pub type HandlerOf<'a, P> =
    dyn for<'t> Handler<<P as Project>::Event, <P as Project>::Tables<'t>> + 'a;

/// A handler of project `P` held for as long as it is needed (a project's
/// `AnyHandler`).
pub type AnyHandlerOf<P> = HandlerOf<'static, P>;

/// A project's database as a test fixture: what the judge reads back.
pub trait Fixture<P: Project>: Tripwires<P> + Sized + Sync {
    /// Whether writers of this database run side by side (PostgreSQL) or
    /// one at a time, each holding the write lock (SQLite): what the
    /// rules-across-messages scenario can make race.
    const CONCURRENT_WRITERS: bool;

    /// A fresh database with every table and nothing in them.
    fn new() -> Self;

    /// Where this fixture's database is, for another connection or
    /// another process ([`Fixture::attach`]).
    fn location(&self) -> String;

    /// The fixture another process or thread made, at `location`.
    fn attach(location: &str) -> Self;

    /// A name for this fixture that no other of this process has (a
    /// broken inbox that remembers ids in memory keys them by it).
    fn identity(&self) -> String;

    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed if `work` succeeds; panics on a storage error.
    fn with_tables<T>(&self, work: impl FnOnce(&mut P::Tables<'_>) -> Result<T, StorageError>)
    -> T;

    /// How many of this database's sessions wait on a lock now (0 where
    /// writers take turns).
    fn waiting_on_locks(&self) -> usize;

    /// Inbox rows recorded for `consumer`.
    fn inbox_rows(&self, consumer: &str) -> usize;

    /// Every dead letter, refused ones included.
    fn dead_letters(&self) -> Vec<DeadLetter>;

    /// Failures counted for `consumer` and not yet dead-lettered.
    fn failures_counted(&self, consumer: &str) -> u64;

    /// A new connection driven one statement at a time, for hand-written
    /// inboxes and for applying a message past the inbox.
    fn raw(&self) -> Box<dyn Raw<P>>;

    /// The same, on a connection that waits for a lock as long as it
    /// takes (a consumer's own connection might): what a broken inbox that
    /// blocks forever is made of.
    fn raw_waiting_forever(&self) -> Box<dyn Raw<P>>;

    /// A new connection to the project's real inbox, dead-lettering by
    /// `policy`.
    fn inbox(&self, policy: Policy) -> LettersOf<P>;

    /// Runs `work` on the tables of an empty database, in a transaction
    /// that is always rolled back: the once-only route's database.
    fn scratch<T>(work: impl FnOnce(&mut dyn Scratch<P>) -> T) -> T;
}

/// An empty database's tables, in a transaction that will be rolled back
/// ([`Fixture::scratch`]).
pub trait Scratch<P: Project> {
    /// Runs `step` under a savepoint: if it returns an error, what it wrote
    /// is rolled back and the rest stays.
    fn attempt(
        &mut self,
        step: &mut dyn FnMut(&mut P::Tables<'_>) -> Result<(), HandlerError>,
    ) -> Result<(), HandlerError>;

    /// Reads (or writes) the tables as they stand.
    fn read(&mut self, read: &mut dyn FnMut(&mut P::Tables<'_>));
}
