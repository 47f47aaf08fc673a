//! What the harness needs to know of a project: its events, its handlers,
//! the tables they are handed, and its database as a test fixture.
//!
//! A project's test support implements [`Project`] once, on a type of its
//! own, and [`Fixture`] (with [`Tripwires`]) on its database fixture, and
//! [`Raw`] on one connection of it. Everything generic in the harness (the
//! judge, the subjects' contract, the scenarios, the known-broken inboxes)
//! is written against them, so it lives here, in the kit, while the
//! fixture's SQL stays the project's.

use std::sync::Arc;

use inbox_kit_runtime::delivery::{DeadLetters, Inbox};
use inbox_kit_runtime::envelope::Wire;
use inbox_kit_runtime::handler::{Handler, HandlerError, Registry};
use inbox_kit_runtime::inbox::{DeadLetter, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;
use inbox_kit_runtime::store::Purged;

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
pub trait Fixture<P: Project>: Tripwires<P::Registry> + Sized + Sync {
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

    /// Runs SQL statements on the database (a broken key's schema change,
    /// for a trap); panics if they fail.
    fn execute(&self, sql: &str);

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

    /// The project's purge (the runtime's, `Store::purge`), walking
    /// `keys_per_transaction` keys per transaction.
    fn purge(
        &self,
        older_than: std::time::Duration,
        keys_per_transaction: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Purged;

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

/// An inbox together with its dead letters (what the real inbox is).
pub trait InboxWithLetters<R: Registry>: Inbox<R> + DeadLetters<R> {}

impl<R: Registry, T: Inbox<R> + DeadLetters<R> + ?Sized> InboxWithLetters<R> for T {}

/// An inbox of project `P` with its dead letters, boxed.
pub type LettersOf<P> = Box<dyn InboxWithLetters<<P as Project>::Registry>>;

/// One connection to a database of project `P`, driven one statement at a
/// time.
pub trait Raw<P: Project>: Send {
    /// Begins a transaction that will write (on SQLite, `BEGIN IMMEDIATE`).
    fn begin(&mut self) -> Result<(), StorageError>;
    fn commit(&mut self) -> Result<(), StorageError>;
    /// Rolls back the open transaction, if there is one.
    fn rollback(&mut self);
    /// Whether the inbox holds (consumer, id): a plain SELECT.
    fn is_recorded(&mut self, consumer: &str, id: &str) -> Result<bool, StorageError>;
    /// Inserts an inbox row received at `received_at` (milliseconds since
    /// the Unix epoch); `Ok(false)` when the row was already there.
    fn record(&mut self, consumer: &str, id: &str, received_at: i64) -> Result<bool, StorageError>;
    /// Runs the handler on the tables, in whatever transaction is open.
    fn apply(
        &mut self,
        handler: &HandlerOf<'_, P>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError>;
    /// Runs a handler's set-based path (it must have one) on the tables,
    /// in whatever transaction is open.
    fn apply_all(
        &mut self,
        handler: &HandlerOf<'_, P>,
        messages: &[&Message<P::Event>],
    ) -> Result<(), HandlerError>;
    /// Runs statements that take no parameters and return no rows
    /// (`SAVEPOINT s`, `ROLLBACK TO SAVEPOINT s`).
    fn run(&mut self, sql: &str) -> Result<(), StorageError>;
    /// The one integer that a query without parameters returns (`SELECT
    /// count(*) ...`).
    fn count(&mut self, sql: &str) -> Result<u64, StorageError>;
    /// Adds one failed attempt, failed at `at`, to the count of (consumer,
    /// id); returns the count.
    fn count_failure(
        &mut self,
        consumer: &str,
        id: &str,
        error: &str,
        at: i64,
    ) -> Result<u32, StorageError>;
    /// Failures counted for (consumer, id), 0 if none.
    fn failures(&mut self, consumer: &str, id: &str) -> Result<u32, StorageError>;
    /// Writes a dead letter (replacing one of the same key).
    fn dead_letter(&mut self, letter: &DeadLetter) -> Result<(), StorageError>;
    /// Deletes the inbox row of (consumer, id).
    fn delete_inbox_row(&mut self, consumer: &str, id: &str) -> Result<(), StorageError>;
    /// Deletes the dead letter of (consumer, id).
    fn delete_dead_letter(&mut self, consumer: &str, id: &str) -> Result<(), StorageError>;
}

/// Applies `message` straight through its handler in a transaction of its
/// own, with no inbox: how the oracle applies each message once, and how a
/// test delivers a repeat *past* the inbox.
pub fn apply_alone<P: Project>(
    raw: &mut dyn Raw<P>,
    handler: &HandlerOf<'_, P>,
    message: &Message<P::Event>,
) -> Result<(), HandlerError> {
    raw.begin()?;
    match raw.apply(handler, message) {
        Ok(()) => Ok(raw.commit()?),
        Err(error) => {
            raw.rollback();
            Err(error)
        }
    }
}
