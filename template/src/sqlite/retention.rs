//! Purging old rows on SQLite: the inbox's own (the runtime's
//! `sqlite::retention`), then this service's sent notifications, the same
//! way: a window of keys per transaction, so deliveries never wait long
//! for the write lock.

use std::time::Duration;

use inbox_kit_runtime::sqlite::retention::{ATTEMPTS, INBOX, purge_tables};
use rusqlite::Connection;

use crate::inbox::StorageError;
use crate::retention::{KeyedTable, cutoff_millis};
use crate::store::Purged;

/// Notifications sent, expiring at `sent_at` (unsent ones never expire).
const SENT: KeyedTable = KeyedTable {
    window_end: "SELECT event_id, channel FROM notifications WHERE (event_id, channel) > (?1, ?2)
                 ORDER BY event_id, channel LIMIT 1 OFFSET ?3",
    delete_window: "DELETE FROM notifications WHERE (event_id, channel) > (?1, ?2)
                    AND (event_id, channel) <= (?3, ?4) AND sent_at < ?5",
    delete_rest: "DELETE FROM notifications WHERE (event_id, channel) > (?1, ?2) AND sent_at < ?3",
};

/// Deletes inbox rows, attempt counts and sent notifications older than
/// `older_than`; `progress` gets the running total of deleted rows.
pub(super) fn purge(
    db: &mut Connection,
    older_than: Duration,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<Purged, StorageError> {
    let [inbox_rows, attempt_rows, sent_notifications] = purge_tables(
        db,
        [&INBOX, &ATTEMPTS, &SENT],
        cutoff_millis(older_than),
        batch_rows,
        progress,
    )?;
    Ok(Purged {
        inbox_rows,
        attempt_rows,
        sent_notifications,
    })
}
