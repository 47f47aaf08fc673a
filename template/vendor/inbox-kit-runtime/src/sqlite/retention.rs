//! Purging old rows on SQLite, the inbox's and the outbox's sent
//! notifications, a window of keys per transaction ([`KeyedTable`]):
//! bounded work per transaction, so deliveries never wait long for the
//! write lock.
//!
//! There is deliberately no index on the rows' age: it would slow every
//! delivery (by about a quarter: 161,000 against 212,000 deliveries/s,
//! medians of four interleaved batched `run`s of a generated project) to
//! speed up a maintenance job.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use std::time::Duration;

use crate::retention::{KeyedTable, cutoff_millis};
use crate::storage::StorageError;
use crate::store::Purged;

/// The inbox rows, expiring at `received_at`.
pub const INBOX: KeyedTable = KeyedTable {
    window_end: "SELECT consumer, message_id FROM inbox WHERE (consumer, message_id) > (?1, ?2)
                 ORDER BY consumer, message_id LIMIT 1 OFFSET ?3",
    delete_window: "DELETE FROM inbox WHERE (consumer, message_id) > (?1, ?2)
                    AND (consumer, message_id) <= (?3, ?4) AND received_at < ?5",
    delete_rest: "DELETE FROM inbox WHERE (consumer, message_id) > (?1, ?2) AND received_at < ?3",
};

/// The failure counts, expiring at `last_failed_at`.
pub const ATTEMPTS: KeyedTable = KeyedTable {
    window_end: "SELECT consumer, message_id FROM attempts WHERE (consumer, message_id) > (?1, ?2)
                 ORDER BY consumer, message_id LIMIT 1 OFFSET ?3",
    delete_window: "DELETE FROM attempts WHERE (consumer, message_id) > (?1, ?2)
                    AND (consumer, message_id) <= (?3, ?4) AND last_failed_at < ?5",
    delete_rest: "DELETE FROM attempts WHERE (consumer, message_id) > (?1, ?2) AND last_failed_at < ?3",
};

/// Notifications sent, expiring at `sent_at` (unsent ones never expire).
pub const SENT: KeyedTable = KeyedTable {
    window_end: "SELECT event_id, channel FROM notifications WHERE (event_id, channel) > (?1, ?2)
                 ORDER BY event_id, channel LIMIT 1 OFFSET ?3",
    delete_window: "DELETE FROM notifications WHERE (event_id, channel) > (?1, ?2)
                    AND (event_id, channel) <= (?3, ?4) AND sent_at < ?5",
    delete_rest: "DELETE FROM notifications WHERE (event_id, channel) > (?1, ?2) AND sent_at < ?3",
};

/// Deletes inbox rows, attempt counts and sent notifications older than
/// `older_than`; `progress` gets the running total of deleted rows.
pub fn purge(
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

/// Deletes the rows of `table` that expired before `cutoff` (milliseconds
/// since the Unix epoch), at most `batch_rows` keys per transaction;
/// `progress` gets the running total after each. Returns the total.
pub fn purge_table(
    db: &mut Connection,
    table: &KeyedTable,
    cutoff: i64,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, StorageError> {
    // Every key column is a non-empty text, so ("", "") sorts before all.
    let mut start = (String::new(), String::new());
    let mut deleted = 0u64;
    loop {
        let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let end: Option<(String, String)> = tx
            .prepare_cached(table.window_end)?
            .query_row(params![start.0, start.1, batch_rows - 1], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?;
        let removed = match &end {
            Some(end) => tx
                .prepare_cached(table.delete_window)?
                .execute(params![start.0, start.1, end.0, end.1, cutoff])?,
            None => tx
                .prepare_cached(table.delete_rest)?
                .execute(params![start.0, start.1, cutoff])?,
        };
        tx.commit()?;
        deleted += removed as u64;
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
    db: &mut Connection,
    tables: [&KeyedTable; N],
    cutoff: i64,
    batch_rows: u32,
    progress: &mut dyn FnMut(u64),
) -> Result<[u64; N], StorageError> {
    let mut deleted = [0; N];
    let mut before = 0;
    for (table, count) in tables.into_iter().zip(&mut deleted) {
        *count = purge_table(db, table, cutoff, batch_rows, &mut |rows| {
            progress(before + rows)
        })?;
        before += *count;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inbox with five rows of `a` received at 1..=5 and two of `b` at
    /// 10 and 20.
    fn inbox() -> Connection {
        let db = Connection::open_in_memory().expect("an in-memory database");
        db.execute_batch(super::super::SCHEMA).expect("the schema");
        for (consumer, id, at) in [
            ("a", "1", 1),
            ("a", "2", 2),
            ("a", "3", 3),
            ("a", "4", 4),
            ("a", "5", 5),
            ("b", "1", 10),
            ("b", "2", 20),
        ] {
            db.execute(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
                params![consumer, id, at],
            )
            .expect("a row");
        }
        db
    }

    fn left(db: &Connection) -> Vec<(String, String)> {
        db.prepare("SELECT consumer, message_id FROM inbox ORDER BY 1, 2")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn deletes_every_expired_row_window_by_window_and_nothing_else() {
        let mut db = inbox();
        let mut totals = Vec::new();
        let deleted =
            purge_table(&mut db, &INBOX, 10, 2, &mut |total| totals.push(total)).expect("a purge");
        assert_eq!(deleted, 5);
        // Windows of two keys: up to a2, up to a4, up to b1 (b1 is not
        // expired), then the rest after b1.
        assert_eq!(totals, [2, 4, 5, 5]);
        assert_eq!(
            left(&db),
            [("b".into(), "1".into()), ("b".into(), "2".into())]
        );
    }

    #[test]
    fn a_row_expiring_at_the_cutoff_is_kept() {
        let mut db = inbox();
        assert_eq!(
            purge_table(&mut db, &INBOX, 3, 100, &mut |_| {}).unwrap(),
            2
        );
        assert_eq!(left(&db).len(), 5);
    }

    #[test]
    fn tables_are_purged_in_turn_under_one_running_total() {
        let mut db = inbox();
        db.execute(
            "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
             VALUES ('a', '9', 1, 'no', 1), ('b', '9', 1, 'no', 99)",
            [],
        )
        .unwrap();
        let mut totals = Vec::new();
        let deleted = purge_tables(&mut db, [&INBOX, &ATTEMPTS], 10, 100, &mut |total| {
            totals.push(total)
        })
        .unwrap();
        assert_eq!(deleted, [5, 1]);
        assert_eq!(totals, [5, 6]);
        let attempts: i64 = db
            .query_row("SELECT count(*) FROM attempts", [], |row| row.get(0))
            .unwrap();
        assert_eq!(attempts, 1);
    }
}
