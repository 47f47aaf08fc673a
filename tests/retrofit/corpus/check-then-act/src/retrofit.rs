//! The reference retrofit: the same functions, now idempotent.
//!
//! Each delivery is one `BEGIN IMMEDIATE` transaction that inserts the
//! inbox row first; the primary-key violation is the duplicate. The feed
//! never sends an event twice, so a failure is written to `retries` (in a
//! transaction of its own, after the rollback) and `retry_due` is the
//! redelivery, with backoff; the third failure parks the event in
//! `dead_letters`, with the inbox row that makes later deliveries
//! duplicates.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, ffi};

use crate::{BUSINESS_SCHEMA, DeadLetter, Event, debit};

/// This consumer's half of the inbox key.
pub const CONSUMER: &str = "wallet";
/// Failed attempts before an event is parked in `dead_letters`.
pub const MAX_ATTEMPTS: u32 = 3;
/// The first retry waits this long; each next one twice as long.
const FIRST_BACKOFF_MS: i64 = 1_000;

const INBOX_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS inbox (
        consumer    TEXT    NOT NULL,
        message_id  TEXT    NOT NULL,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (consumer, message_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS retries (
        event_id   TEXT    PRIMARY KEY,
        account    INTEGER NOT NULL,
        amount     INTEGER NOT NULL,
        attempts   INTEGER NOT NULL,
        next_at    INTEGER NOT NULL,
        last_error TEXT    NOT NULL
    );
    CREATE TABLE IF NOT EXISTS dead_letters (
        event_id TEXT    PRIMARY KEY,
        account  INTEGER NOT NULL,
        amount   INTEGER NOT NULL,
        attempts INTEGER NOT NULL,
        error    TEXT    NOT NULL,
        dead_at  INTEGER NOT NULL
    );
";

pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let db = Connection::open(path)?;
    db.busy_timeout(Duration::from_secs(10))?;
    // WAL: readers never wait for the writer.
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.execute_batch(BUSINESS_SCHEMA)?;
    db.execute_batch(INBOX_SCHEMA)?;
    Ok(db)
}

/// What happened to one delivery.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Applied,
    Duplicate,
    /// Rolled back and written to `retries`.
    Failed,
    DeadLettered,
}

/// Applies one event at most once. A failure is never dropped: it waits in
/// `retries`.
pub fn handle(db: &Connection, event: &Event) {
    if let Err(error) = deliver(db, event, now_ms()) {
        // Not even the failure could be written (the database is gone):
        // the feed offers nothing better than saying so loudly.
        eprintln!("event {}: storage error, not recorded: {error}", event.id);
    }
}

fn deliver(db: &Connection, event: &Event, now: i64) -> rusqlite::Result<Outcome> {
    let tx = Transaction::new_unchecked(db, TransactionBehavior::Immediate)?;
    match tx.execute(
        "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
        (CONSUMER, &event.id, now),
    ) {
        Ok(_) => {}
        Err(error) if is_duplicate(&error) => return Ok(Outcome::Duplicate),
        Err(error) => return Err(error),
    }
    if let Err(error) = debit(&tx, event) {
        // The rollback takes the inbox row with it, so a retry applies.
        drop(tx);
        return record_failure(db, event, &error.to_string(), now);
    }
    tx.execute("DELETE FROM retries WHERE event_id = ?1", [&event.id])?;
    tx.commit()?;
    Ok(Outcome::Applied)
}

fn is_duplicate(error: &rusqlite::Error) -> bool {
    error.sqlite_extended_error_code() == Some(ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

/// Counts a failed attempt, in a transaction of its own (the attempt's was
/// rolled back), and parks the event at the last one.
fn record_failure(
    db: &Connection,
    event: &Event,
    error: &str,
    now: i64,
) -> rusqlite::Result<Outcome> {
    let tx = Transaction::new_unchecked(db, TransactionBehavior::Immediate)?;
    let attempts: u32 = tx.query_row(
        "INSERT INTO retries (event_id, account, amount, attempts, next_at, last_error)
         VALUES (?1, ?2, ?3, 1, ?4 + ?5, ?6)
         ON CONFLICT (event_id) DO UPDATE
            SET attempts = attempts + 1,
                next_at = ?4 + ?5 * (1 << attempts),
                last_error = excluded.last_error
         RETURNING attempts",
        (
            &event.id,
            event.account,
            event.amount,
            now,
            FIRST_BACKOFF_MS,
            error,
        ),
        |row| row.get(0),
    )?;
    let outcome = if attempts >= MAX_ATTEMPTS {
        tx.execute(
            "INSERT INTO dead_letters (event_id, account, amount, attempts, error, dead_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            (&event.id, event.account, event.amount, attempts, error, now),
        )?;
        tx.execute(
            "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
            (CONSUMER, &event.id, now),
        )?;
        tx.execute("DELETE FROM retries WHERE event_id = ?1", [&event.id])?;
        eprintln!(
            "event {} parked after {attempts} failed attempts: {error}",
            event.id
        );
        Outcome::DeadLettered
    } else {
        eprintln!(
            "event {} failed (attempt {attempts}), will retry: {error}",
            event.id
        );
        Outcome::Failed
    };
    tx.commit()?;
    Ok(outcome)
}

/// The redelivery this feed lacks: delivers again every failed event whose
/// backoff has passed at `now_ms`, and returns how many it delivered.
pub fn retry_due(db: &Connection, now_ms: i64) -> rusqlite::Result<usize> {
    let due: Vec<Event> = db
        .prepare(
            "SELECT event_id, account, amount FROM retries WHERE next_at <= ?1 ORDER BY next_at",
        )?
        .query_map([now_ms], |row| {
            Ok(Event {
                id: row.get(0)?,
                account: row.get(1)?,
                amount: row.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    for event in &due {
        deliver(db, event, now_ms)?;
    }
    Ok(due.len())
}

pub fn dead_letters(db: &Connection) -> rusqlite::Result<Vec<DeadLetter>> {
    db.prepare("SELECT event_id, account, amount, attempts, error FROM dead_letters ORDER BY dead_at, event_id")?
        .query_map([], |row| {
            Ok(DeadLetter {
                event: Event {
                    id: row.get(0)?,
                    account: row.get(1)?,
                    amount: row.get(2)?,
                },
                attempts: row.get(3)?,
                error: row.get(4)?,
            })
        })?
        .collect()
}

/// Carries the old dedup records into the inbox, in one transaction with
/// the schema change, so that every id the old code processed is a
/// duplicate from the first delivery on. The old table is renamed, not
/// dropped: old code still running fails loudly instead of recording ids
/// the inbox never sees, and the rows stay for the report until someone
/// drops them. Running it again does nothing.
pub fn migrate(db: &Connection) -> rusqlite::Result<()> {
    let tx = Transaction::new_unchecked(db, TransactionBehavior::Immediate)?;
    tx.execute_batch(INBOX_SCHEMA)?;
    let old_table = tx
        .query_row(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'processed_events'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if old_table && cfg!(not(feature = "forget-migration")) {
        // The old table has no time: count the window from the migration.
        tx.execute(
            "INSERT OR IGNORE INTO inbox (consumer, message_id, received_at)
             SELECT ?1, event_id, ?2 FROM processed_events",
            (CONSUMER, now_ms()),
        )?;
        tx.execute_batch("ALTER TABLE processed_events RENAME TO processed_events_retired")?;
    }
    tx.commit()
}

/// Read-only: events the ledger holds more than once, with how many times
/// (check-then-act left these behind). For people to settle, never fixed
/// here.
pub fn double_applied(db: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    db.prepare(
        "SELECT event_id, COUNT(*) FROM ledger GROUP BY event_id HAVING COUNT(*) > 1 ORDER BY event_id",
    )?
    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
    .collect()
}

fn now_ms() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}
