//! The reference retrofit: the same `dispatch`, with the inbox keyed by
//! (consumer, message id), failures counted and dead-lettered per
//! consumer, and the old shared records split between the consumers that
//! really applied them.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::{BUSINESS_SCHEMA, Consumer, DeadLetter, OrderPlaced};

/// Failed attempts before a consumer parks a message.
pub const MAX_ATTEMPTS: u32 = 3;

const INBOX_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS inbox (
        consumer    TEXT    NOT NULL,
        message_id  TEXT    NOT NULL,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (consumer, message_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS attempts (
        consumer   TEXT    NOT NULL,
        message_id TEXT    NOT NULL,
        failures   INTEGER NOT NULL,
        last_error TEXT    NOT NULL,
        PRIMARY KEY (consumer, message_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS dead_letters (
        consumer   TEXT    NOT NULL,
        message_id TEXT    NOT NULL,
        order_id   INTEGER NOT NULL,
        total      INTEGER NOT NULL,
        attempts   INTEGER NOT NULL,
        error      TEXT    NOT NULL,
        dead_at    INTEGER NOT NULL,
        PRIMARY KEY (consumer, message_id)
    );
";

pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let db = Connection::open(path)?;
    db.busy_timeout(Duration::from_secs(10))?;
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.execute_batch(BUSINESS_SCHEMA)?;
    db.execute_batch(INBOX_SCHEMA)?;
    Ok(db)
}

/// Runs `consumer` on `order` at most once per consumer. An error means
/// "nack": the broker delivers the message again. A message parked as a
/// dead letter is acknowledged.
pub fn dispatch(
    db: &mut Connection,
    consumer: &dyn Consumer,
    order: &OrderPlaced,
) -> rusqlite::Result<()> {
    let now = now_ms();
    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // The conflict target names the key: no other error is ignored.
    let claimed = tx.execute(
        "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (consumer, message_id) DO NOTHING",
        (consumer.name(), &order.message_id, now),
    )? == 1;
    if !claimed {
        return Ok(()); // a duplicate for this consumer
    }
    if let Err(error) = consumer.apply(&tx, order) {
        drop(tx); // the inbox row goes with the update
        return record_failure(db, consumer, order, error, now);
    }
    tx.execute(
        "DELETE FROM attempts WHERE consumer = ?1 AND message_id = ?2",
        (consumer.name(), &order.message_id),
    )?;
    tx.commit()
}

/// Counts a failed attempt in a transaction of its own. Below the limit
/// the error goes back to the broker (nack); at the limit the message is
/// parked and acknowledged.
fn record_failure(
    db: &mut Connection,
    consumer: &dyn Consumer,
    order: &OrderPlaced,
    error: rusqlite::Error,
    now: i64,
) -> rusqlite::Result<()> {
    let text = error.to_string();
    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let failures: u32 = tx.query_row(
        "INSERT INTO attempts (consumer, message_id, failures, last_error) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT (consumer, message_id) DO UPDATE
            SET failures = failures + 1, last_error = excluded.last_error
         RETURNING failures",
        (consumer.name(), &order.message_id, &text),
        |row| row.get(0),
    )?;
    if failures < MAX_ATTEMPTS {
        tx.commit()?;
        return Err(error);
    }
    tx.execute(
        "INSERT INTO dead_letters (consumer, message_id, order_id, total, attempts, error, dead_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        (
            consumer.name(),
            &order.message_id,
            order.order_id,
            order.total,
            failures,
            &text,
            now,
        ),
    )?;
    tx.execute(
        "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (consumer, message_id) DO NOTHING",
        (consumer.name(), &order.message_id, now),
    )?;
    tx.execute(
        "DELETE FROM attempts WHERE consumer = ?1 AND message_id = ?2",
        (consumer.name(), &order.message_id),
    )?;
    tx.commit()?;
    eprintln!(
        "{}: {} parked after {failures} attempts: {text}",
        consumer.name(),
        order.message_id
    );
    Ok(())
}

pub fn dead_letters(db: &Connection) -> rusqlite::Result<Vec<DeadLetter>> {
    db.prepare(
        "SELECT consumer, message_id, order_id, total, attempts, error FROM dead_letters
         ORDER BY dead_at, consumer, message_id",
    )?
    .query_map([], |row| {
        Ok(DeadLetter {
            consumer: row.get(0)?,
            order: OrderPlaced {
                message_id: row.get(1)?,
                order_id: row.get(2)?,
                total: row.get(3)?,
            },
            attempts: row.get(4)?,
            error: row.get(5)?,
        })
    })?
    .collect()
}

/// Each consumer and the business table whose rows prove it applied a
/// message.
const APPLIED_BY: [(&str, &str); 2] = [("billing", "invoices"), ("shipping", "shipments")];

/// Carries the shared records into the inbox in one transaction with the
/// schema change. An old id only says that *some* consumer applied the
/// message, so it goes to the consumers whose own rows show it; the others
/// never applied it and must not find it recorded. The old table is
/// renamed, not dropped: old code still running fails, and
/// `skipped_messages` reads it. Running it again does nothing.
pub fn migrate(db: &mut Connection) -> rusqlite::Result<()> {
    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(INBOX_SCHEMA)?;
    if table_exists(&tx, "processed")? {
        let now = now_ms();
        for (consumer, table) in APPLIED_BY {
            tx.execute(
                &format!(
                    "INSERT OR IGNORE INTO inbox (consumer, message_id, received_at)
                     SELECT ?1, p.message_id, ?2 FROM processed p
                     WHERE EXISTS (SELECT 1 FROM {table} t WHERE t.message_id = p.message_id)"
                ),
                (consumer, now),
            )?;
        }
        tx.execute_batch("ALTER TABLE processed RENAME TO processed_retired")?;
    }
    tx.commit()
}

/// Read-only: (consumer, message id) of every message the old shared key
/// recorded that this consumer never applied. For people to decide on
/// (ship now? refund?), never replayed here.
pub fn skipped_messages(db: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    if !table_exists(db, "processed_retired")? {
        return Ok(Vec::new());
    }
    db.prepare(
        "SELECT c.consumer, r.message_id
         FROM processed_retired r
         CROSS JOIN (SELECT 'billing' AS consumer UNION ALL SELECT 'shipping') c
         WHERE NOT EXISTS (
             SELECT 1 FROM inbox i WHERE i.consumer = c.consumer AND i.message_id = r.message_id
         )
         ORDER BY r.message_id, c.consumer",
    )?
    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

fn table_exists(db: &Connection, name: &str) -> rusqlite::Result<bool> {
    Ok(db
        .query_row(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [name],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

fn now_ms() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}
