//! What a consumer needs from a database, in one trait: [`Store`].
//!
//! The commands, the pipeline and the tests reach the database through it,
//! and each database feature implements it once for any project
//! (`sqlite::Database`, `postgres::Database`), generic over what the
//! project hands it: its handlers and their tables. So a project holds its
//! tables' SQL and nothing of the connections, the schema's creation, the
//! purge or the backlog: those are here, where a fix reaches every
//! project by a version bump.
//!
//! Every project's outbox is a table named `notifications`, keyed by
//! `(event_id, channel)`, with the relay's bookkeeping columns
//! (`queued_at`, `sent_at`, `parked_at`): the backlog and the purge read
//! it by those names on every database.

use std::time::Duration;

use crate::delivery::{DeadLetters, Inbox};
use crate::handler::Registry;
use crate::inbox::Policy;
use crate::metrics::Watched;
use crate::relay::{Notice, Queue};
use crate::storage::StorageError;

/// A database holding the inbox and every handler's tables, and what its
/// metrics read ([`Watched`]: the backlog, the tables it lacks).
pub trait Store: Watched + Clone + Send + Sync + 'static {
    /// The project's handlers, whose deliveries [`Store::Inbox`] applies.
    type Registry: Registry;

    /// The handlers' tables as one object (the project's `dyn Tables`),
    /// seen through a connection that lives for `'t`.
    type Tables<'t>: ?Sized;

    /// A row of the outbox, as the relay sends it.
    type Notice: Notice;

    /// One connection's inbox.
    type Inbox: Inbox<Self::Registry> + DeadLetters<Self::Registry> + 'static;

    /// The outbox as a relay sees it.
    type RelayQueue: Queue<Self::Notice> + 'static;

    /// Opens a new connection for one worker.
    fn inbox(&self, policy: Policy) -> Result<Self::Inbox, StorageError>;

    /// Opens a new connection for one relay.
    fn relay_queue(&self) -> Result<Self::RelayQueue, StorageError>;

    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed if `work` succeeds (to read state, or to set it up).
    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut Self::Tables<'_>) -> Result<T, StorageError>,
    ) -> Result<T, StorageError>;

    /// Runs `sql` (statements separated by `;`) in one transaction: all of
    /// them or, when one fails, none (`seed`: a consumer's own state).
    fn execute_script(&self, sql: &str) -> Result<(), StorageError>;

    /// Inbox rows per consumer, by consumer name.
    fn inbox_rows(&self) -> Result<Vec<(String, u64)>, StorageError>;

    /// Deletes inbox rows, attempt counts and sent notifications older
    /// than `older_than`, in transactions of at most `batch_rows` rows.
    /// `progress` gets the running total of deleted rows.
    fn purge(
        &self,
        older_than: Duration,
        batch_rows: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Purged, StorageError>;
}

/// What a purge deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub inbox_rows: u64,
    pub attempt_rows: u64,
    pub sent_notifications: u64,
}

/// Inbox rows per consumer, the same SQL on every database.
pub const INBOX_ROWS_PER_CONSUMER: &str =
    "SELECT consumer, count(*) FROM inbox GROUP BY consumer ORDER BY consumer";

/// [`crate::metrics::Backlog::dead_letters`], the same SQL on every
/// database.
pub const DEAD_LETTERS_PER_CONSUMER: &str =
    "SELECT consumer, count(*) FROM dead_letters GROUP BY consumer ORDER BY consumer";

/// [`crate::metrics::Backlog::unsent`] and
/// [`crate::metrics::Backlog::oldest_unsent_at`]: read off the relay's own
/// index of what is due (`notifications_due`), so a scrape costs the
/// backlog, not the outbox.
pub const UNSENT_NOTIFICATIONS: &str = "SELECT count(*), min(queued_at) FROM notifications
     WHERE sent_at IS NULL AND parked_at IS NULL";

/// The tables `schema` (a migration's SQL) creates that are not among
/// `present`, in the schema's order.
pub fn tables_missing(schema: &str, present: &[String]) -> Vec<String> {
    tables_created_by(schema)
        .filter(|table| !present.iter().any(|present| present == table))
        .map(str::to_owned)
        .collect()
}

/// The names after each `CREATE TABLE IF NOT EXISTS` of `schema`.
fn tables_created_by(schema: &str) -> impl Iterator<Item = &str> {
    schema
        .split("CREATE TABLE IF NOT EXISTS ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_tables_are_those_the_schema_creates_and_the_database_lacks() {
        let schema = "-- CREATE TABLE inbox is in a comment
            CREATE TABLE IF NOT EXISTS inbox (id text);
            CREATE INDEX IF NOT EXISTS inbox_by_id ON inbox (id);
            CREATE TABLE IF NOT EXISTS attempts (
                id text
            );
            CREATE TABLE IF NOT EXISTS dead_letters (id text);";
        let present = ["attempts".to_owned(), "unrelated".to_owned()];
        assert_eq!(tables_missing(schema, &present), ["inbox", "dead_letters"]);
        let all = ["inbox", "attempts", "dead_letters"].map(str::to_owned);
        assert!(tables_missing(schema, &all).is_empty());
    }
}
