//! What this consumer needs from a database, in one trait.
//!
//! Everything else in the crate (the pipeline, the commands, the tests) talks
//! to the database through [`Store`], and the database module of this
//! project (named in `database.rs`) implements it: connections, the inbox, the
//! handlers' tables and retention. Swapping databases means writing that
//! module again, and nothing else.

use std::time::Duration;

use crate::handlers::{Handlers, Notification, Tables};
use crate::inbox::{DeadLetters, Inbox, Policy, StorageError};
use crate::relay;

pub use crate::metrics::{Backlog, Watched};

/// A database holding the inbox and every handler's tables, and what its
/// metrics read ([`Watched`]: the backlog, the tables it lacks).
pub trait Store: Watched + Clone + Send + Sync + 'static {
    /// One connection's inbox.
    type Inbox: Inbox<Handlers> + DeadLetters<Handlers> + 'static;

    /// The outbox as a relay sees it.
    type RelayQueue: relay::Queue<Notification> + 'static;

    /// Opens a new connection for one worker.
    fn inbox(&self, policy: Policy) -> Result<Self::Inbox, StorageError>;

    /// Opens a new connection for one relay.
    fn relay_queue(&self) -> Result<Self::RelayQueue, StorageError>;

    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed if `work` succeeds (to read state, or to set it up).
    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut dyn Tables) -> Result<T, StorageError>,
    ) -> Result<T, StorageError>;

    /// Inbox rows per consumer, by consumer name.
    fn inbox_rows(&self) -> Result<Vec<(String, u64)>, StorageError>;

    /// Deletes inbox rows, attempt counts and sent notifications older than
    /// `older_than`, in transactions of at most `batch_rows` rows. `progress` gets the running
    /// total of deleted rows.
    fn purge(
        &self,
        older_than: Duration,
        batch_rows: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Purged, StorageError>;
}

/// [`Backlog::dead_letters`], the same SQL on every database.
pub const DEAD_LETTERS_PER_CONSUMER: &str =
    "SELECT consumer, count(*) FROM dead_letters GROUP BY consumer ORDER BY consumer";

/// [`Backlog::unsent`] and [`Backlog::oldest_unsent_at`]: read off the
/// relay's own index of what is due (`notifications_due`), so a scrape
/// costs the backlog, not the outbox.
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

/// What a purge deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub inbox_rows: u64,
    pub attempt_rows: u64,
    pub sent_notifications: u64,
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
