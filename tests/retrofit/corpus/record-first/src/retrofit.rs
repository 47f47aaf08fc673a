//! The reference retrofit: the same `Reserver`, now applying each message
//! once and losing none.
//!
//! The inbox row and the reservation share one `BEGIN IMMEDIATE`
//! transaction, inbox row first, so a failed reservation takes the row
//! with it and the redelivery the broker was asked for applies. A failure
//! is counted in `attempts` in a transaction of its own, after the
//! rollback: with `RAISE(ROLLBACK)` or an I/O error SQLite has already
//! ended the attempt's transaction, and nothing more may be written in it.
//! The third failure writes a dead letter and answers `Term`.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, ffi};

use crate::{Ack, BUSINESS_SCHEMA, DeadLetter, Delivery, reserve};

/// This consumer's half of the inbox key.
pub const CONSUMER: &str = "inventory";
/// Failed attempts before a message is dead-lettered.
pub const MAX_ATTEMPTS: u32 = 3;

const INBOX_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS inbox (
        consumer    TEXT    NOT NULL,
        message_id  TEXT    NOT NULL,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (consumer, message_id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS attempts (
        message_id TEXT    PRIMARY KEY,
        failures   INTEGER NOT NULL,
        last_error TEXT    NOT NULL
    );
    CREATE TABLE IF NOT EXISTS dead_letters (
        message_id TEXT    PRIMARY KEY,
        sku        TEXT    NOT NULL,
        quantity   INTEGER NOT NULL,
        attempts   INTEGER NOT NULL,
        error      TEXT    NOT NULL,
        dead_at    INTEGER NOT NULL
    );
";

pub struct Reserver {
    db: Connection,
}

impl Reserver {
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let db = Connection::open(path)?;
        db.busy_timeout(Duration::from_secs(10))?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.execute_batch(BUSINESS_SCHEMA)?;
        db.execute_batch(INBOX_SCHEMA)?;
        Ok(Self { db })
    }

    pub fn on_message(&mut self, delivery: &Delivery) -> Ack {
        self.deliver(delivery).unwrap_or_else(|error| {
            // Nothing was recorded: let the broker try again.
            eprintln!("message {}: storage error: {error}", delivery.message_id);
            Ack::Nak
        })
    }

    fn deliver(&mut self, delivery: &Delivery) -> rusqlite::Result<Ack> {
        let now = now_ms();
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        match tx.execute(
            "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
            (CONSUMER, &delivery.message_id, now),
        ) {
            Ok(_) => {}
            Err(error) if is_duplicate(&error) => return Ok(Ack::Ack),
            Err(error) => return Err(error),
        }
        if let Err(error) = reserve(&tx, delivery) {
            // Roll back if SQLite has not already done so; the inbox row
            // goes too, so the redelivery applies.
            drop(tx);
            return self.record_failure(delivery, &error.to_string(), now);
        }
        tx.execute(
            "DELETE FROM attempts WHERE message_id = ?1",
            [&delivery.message_id],
        )?;
        tx.commit()?;
        Ok(Ack::Ack)
    }

    /// Counts a failed attempt in a transaction of its own; at the last
    /// one, parks the message and tells the broker to stop.
    fn record_failure(
        &mut self,
        delivery: &Delivery,
        error: &str,
        now: i64,
    ) -> rusqlite::Result<Ack> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let failures: u32 = tx.query_row(
            "INSERT INTO attempts (message_id, failures, last_error) VALUES (?1, 1, ?2)
             ON CONFLICT (message_id) DO UPDATE
                SET failures = failures + 1, last_error = excluded.last_error
             RETURNING failures",
            (&delivery.message_id, error),
            |row| row.get(0),
        )?;
        let answer = if failures < MAX_ATTEMPTS {
            eprintln!(
                "message {} failed (attempt {failures}): {error}",
                delivery.message_id
            );
            Ack::Nak
        } else {
            tx.execute(
                "INSERT INTO dead_letters (message_id, sku, quantity, attempts, error, dead_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                (
                    &delivery.message_id,
                    &delivery.sku,
                    delivery.quantity,
                    failures,
                    error,
                    now,
                ),
            )?;
            tx.execute(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
                (CONSUMER, &delivery.message_id, now),
            )?;
            tx.execute(
                "DELETE FROM attempts WHERE message_id = ?1",
                [&delivery.message_id],
            )?;
            eprintln!(
                "message {} dead-lettered after {failures} attempts: {error}",
                delivery.message_id
            );
            Ack::Term
        };
        tx.commit()?;
        Ok(answer)
    }

    pub fn dead_letters(&self) -> rusqlite::Result<Vec<DeadLetter>> {
        self.db
            .prepare(
                "SELECT message_id, sku, quantity, attempts, error FROM dead_letters
                 ORDER BY dead_at, message_id",
            )?
            .query_map([], |row| {
                Ok(DeadLetter {
                    delivery: Delivery {
                        message_id: row.get(0)?,
                        sku: row.get(1)?,
                        quantity: row.get(2)?,
                    },
                    attempts: row.get(3)?,
                    error: row.get(4)?,
                })
            })?
            .collect()
    }

    /// Carries `processed` into the inbox in one transaction with the
    /// schema change, and renames it so that old code still running fails
    /// instead of recording ids the inbox never sees. Every recorded id
    /// stays a duplicate, the lost ones too: the broker will not send them
    /// again anyway, and reserving them now is for people to decide, from
    /// `lost_messages`. Running it again does nothing.
    pub fn migrate(&mut self) -> rusqlite::Result<()> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(INBOX_SCHEMA)?;
        let old_table = tx
            .query_row(
                "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'processed'",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if old_table && cfg!(not(feature = "forget-migration")) {
            tx.execute(
                "INSERT OR IGNORE INTO inbox (consumer, message_id, received_at)
                 SELECT ?1, message_id, ?2 FROM processed",
                (CONSUMER, now_ms()),
            )?;
            tx.execute_batch("ALTER TABLE processed RENAME TO processed_retired")?;
        }
        tx.commit()
    }

    /// Read-only: ids recorded as processed whose reservation never
    /// happened (record-first lost them), dead letters aside.
    pub fn lost_messages(&self) -> rusqlite::Result<Vec<String>> {
        self.db
            .prepare(
                "SELECT i.message_id FROM inbox i
                 WHERE i.consumer = ?1
                   AND NOT EXISTS (SELECT 1 FROM reservations r WHERE r.message_id = i.message_id)
                   AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.message_id = i.message_id)
                 ORDER BY i.message_id",
            )?
            .query_map([CONSUMER], |row| row.get(0))?
            .collect()
    }
}

fn is_duplicate(error: &rusqlite::Error) -> bool {
    error.sqlite_extended_error_code() == Some(ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

fn now_ms() -> i64 {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}
