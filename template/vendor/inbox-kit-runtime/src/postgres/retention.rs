//! Purging old rows on PostgreSQL, the inbox's and the outbox's sent
//! notifications, a window of keys per
//! transaction ([`KeyedTable`]): each transaction is short, so deliveries
//! never wait long behind it, and no index on the rows' age is needed
//! (every delivery would pay to maintain it).

use std::time::Duration;

use postgres::Client;

use crate::retention::{KeyedTable, cutoff_millis};
use crate::storage::StorageError;
use crate::store::Purged;

/// The inbox rows, expiring at `received_at`.
pub const INBOX: KeyedTable = KeyedTable {
    window_end: "SELECT consumer, message_id FROM inbox WHERE (consumer, message_id) > ($1, $2)
                 ORDER BY consumer, message_id LIMIT 1 OFFSET $3",
    delete_window: "DELETE FROM inbox WHERE (consumer, message_id) > ($1, $2)
                    AND (consumer, message_id) <= ($3, $4) AND received_at < $5",
    delete_rest: "DELETE FROM inbox WHERE (consumer, message_id) > ($1, $2) AND received_at < $3",
};

/// The failure counts, expiring at `last_failed_at`.
pub const ATTEMPTS: KeyedTable = KeyedTable {
    window_end: "SELECT consumer, message_id FROM attempts WHERE (consumer, message_id) > ($1, $2)
                 ORDER BY consumer, message_id LIMIT 1 OFFSET $3",
    delete_window: "DELETE FROM attempts WHERE (consumer, message_id) > ($1, $2)
                    AND (consumer, message_id) <= ($3, $4) AND last_failed_at < $5",
    delete_rest: "DELETE FROM attempts WHERE (consumer, message_id) > ($1, $2) AND last_failed_at < $3",
};

/// Notifications sent, expiring at `sent_at` (unsent ones never expire).
pub const SENT: KeyedTable = KeyedTable {
    window_end: "SELECT event_id, channel FROM notifications WHERE (event_id, channel) > ($1, $2)
                 ORDER BY event_id, channel LIMIT 1 OFFSET $3",
    delete_window: "DELETE FROM notifications WHERE (event_id, channel) > ($1, $2)
                    AND (event_id, channel) <= ($3, $4) AND sent_at < $5",
    delete_rest: "DELETE FROM notifications WHERE (event_id, channel) > ($1, $2) AND sent_at < $3",
};

/// Deletes inbox rows, attempt counts and sent notifications older than
/// `older_than`; `progress` gets the running total of deleted rows.
pub fn purge(
    client: &mut Client,
    older_than: Duration,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<Purged, StorageError> {
    let [inbox_rows, attempt_rows, sent_notifications] = purge_tables(
        client,
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

/// Deletes the rows of `table` that expired before `cutoff` (milliseconds
/// since the Unix epoch), at most `batch_rows` keys per transaction;
/// `progress` gets the running total after each. Returns the total.
pub fn purge_table(
    client: &mut Client,
    table: &KeyedTable,
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

/// Purges each of `tables` in turn (see [`purge_table`]), with one
/// `progress` over them all: it gets the running total of every table so
/// far. Returns what each table lost, in the order given.
pub fn purge_tables<const N: usize>(
    client: &mut Client,
    tables: [&KeyedTable; N],
    cutoff: i64,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<[u64; N], StorageError> {
    let mut deleted = [0; N];
    let mut before = 0;
    for (table, count) in tables.into_iter().zip(&mut deleted) {
        *count = purge_table(client, table, cutoff, batch_rows, &mut |rows| {
            progress(before + rows)
        })?;
        before += *count;
    }
    Ok(deleted)
}
