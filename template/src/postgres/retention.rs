//! Purging old inbox rows on PostgreSQL.
//!
//! Like on SQLite, there is no index on the rows' age (every delivery would
//! pay to maintain it): the purge walks each table in key order, a window
//! of `batch_rows` keys per transaction, and deletes the expired rows in
//! that window. Each transaction is short, so deliveries never wait long
//! behind it, and the whole table is read once.

use std::time::Duration;

use postgres::Client;

use crate::inbox::StorageError;
use crate::retention::cutoff_millis;
use crate::store::Purged;

/// Deletes inbox rows and attempt counts older than `older_than`;
/// `progress` gets the running total of deleted rows.
pub(super) fn purge(
    client: &mut Client,
    older_than: Duration,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<Purged, StorageError> {
    let cutoff = cutoff_millis(older_than);
    let inbox_rows = purge_table(client, &INBOX, cutoff, batch_rows, progress)?;
    let attempt_rows = purge_table(client, &ATTEMPTS, cutoff, batch_rows, &mut |rows| {
        progress(inbox_rows + rows)
    })?;
    let sent_notifications = purge_table(client, &SENT, cutoff, batch_rows, &mut |rows| {
        progress(inbox_rows + attempt_rows + rows)
    })?;
    Ok(Purged {
        inbox_rows,
        attempt_rows,
        sent_notifications,
    })
}

/// The statements that purge one table, walked in the order of its key
/// (two text columns).
struct Table {
    /// The last key of the next window: `LIMIT 1 OFFSET batch_rows - 1`.
    window_end: &'static str,
    /// Deletes expired rows in (start, end].
    delete_window: &'static str,
    /// Deletes expired rows after start (the last, partial window).
    delete_rest: &'static str,
}

const INBOX: Table = Table {
    window_end: "SELECT consumer, message_id FROM inbox WHERE (consumer, message_id) > ($1, $2)
                 ORDER BY consumer, message_id LIMIT 1 OFFSET $3",
    delete_window: "DELETE FROM inbox WHERE (consumer, message_id) > ($1, $2)
                    AND (consumer, message_id) <= ($3, $4) AND received_at < $5",
    delete_rest: "DELETE FROM inbox WHERE (consumer, message_id) > ($1, $2) AND received_at < $3",
};

const ATTEMPTS: Table = Table {
    window_end: "SELECT consumer, message_id FROM attempts WHERE (consumer, message_id) > ($1, $2)
                 ORDER BY consumer, message_id LIMIT 1 OFFSET $3",
    delete_window: "DELETE FROM attempts WHERE (consumer, message_id) > ($1, $2)
                    AND (consumer, message_id) <= ($3, $4) AND last_failed_at < $5",
    delete_rest: "DELETE FROM attempts WHERE (consumer, message_id) > ($1, $2) AND last_failed_at < $3",
};

const SENT: Table = Table {
    window_end: "SELECT event_id, channel FROM notifications WHERE (event_id, channel) > ($1, $2)
                 ORDER BY event_id, channel LIMIT 1 OFFSET $3",
    delete_window: "DELETE FROM notifications WHERE (event_id, channel) > ($1, $2)
                    AND (event_id, channel) <= ($3, $4) AND sent_at < $5",
    delete_rest: "DELETE FROM notifications WHERE (event_id, channel) > ($1, $2) AND sent_at < $3",
};

fn purge_table(
    client: &mut Client,
    table: &Table,
    cutoff: i64,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, StorageError> {
    // Every key column is a non-empty text, so ("", "") sorts before all.
    let mut start = (String::new(), String::new());
    let offset = i64::from(batch_rows) - 1;
    let mut deleted = 0u64;
    loop {
        let mut tx = client.transaction()?;
        let end = tx
            .query_opt(table.window_end, &[&start.0, &start.1, &offset])?
            .map(|row| (row.get::<_, String>(0), row.get::<_, String>(1)));
        let removed = match &end {
            Some(end) => tx.execute(
                table.delete_window,
                &[&start.0, &start.1, &end.0, &end.1, &cutoff],
            )?,
            None => tx.execute(table.delete_rest, &[&start.0, &start.1, &cutoff])?,
        };
        tx.commit()?;
        deleted += removed;
        progress(deleted);
        match end {
            Some(end) => start = end,
            None => return Ok(deleted),
        }
    }
}
