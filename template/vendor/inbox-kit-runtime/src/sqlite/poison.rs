//! Poison messages on SQLite: a message whose handler keeps failing must
//! not be retried forever, and must not disappear either.
//!
//! Each failure is counted in `attempts`, written after the failed
//! delivery's savepoint was rolled back, so the count survives the rollback
//! that undoes everything the attempt did. When a message reaches the
//! configured maximum it moves to `dead_letters` with its payload and last
//! error, and its inbox row is written so that further redeliveries are
//! duplicates. A message its handler refused (see
//! [`crate::handler::Refused`]) is dead-lettered at once, the same way.
//! `redrive` gives a dead letter another chance.

use rusqlite::{Connection, OptionalExtension, params};

use crate::delivery::Delivery;
use crate::handler::{Registry, Subscriber};
use crate::inbox::{DeadLetter, Outcome, Policy};
use crate::storage::StorageError;

/// Counts a failed attempt and decides what it means: a plain failure
/// (the broker should redeliver) or, at `max_attempts`, a dead letter.
pub(super) fn record_failure<R: Registry>(
    db: &Connection,
    delivery: &Delivery<'_, R>,
    error: &str,
    now: i64,
    policy: Policy,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    let failures: u32 = db
        .prepare_cached(
            "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
             VALUES (?1, ?2, 1, ?3, ?4)
             ON CONFLICT (consumer, message_id) DO UPDATE
                SET failures = failures + 1, last_error = excluded.last_error,
                    last_failed_at = excluded.last_failed_at
             RETURNING failures",
        )?
        .query_row(params![consumer, id, error, now], |row| row.get(0))?;
    if !policy.exhausted(failures, delivery.delivered) {
        tracing::warn!(consumer, message_id = id, failures, %error, "delivery failed; it will apply on redelivery");
        return Ok(Outcome::Failed(error.to_owned()));
    }
    dead_letter(db, delivery, error, failures, false, now)?;
    Ok(Outcome::DeadLettered(error.to_owned()))
}

/// Dead-letters a message its handler refused, at once: it would be
/// refused again on every delivery.
pub(super) fn refuse<R: Registry>(
    db: &Connection,
    delivery: &Delivery<'_, R>,
    reason: &str,
    now: i64,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    let failures: u32 = db
        .prepare_cached("SELECT failures FROM attempts WHERE consumer = ?1 AND message_id = ?2")?
        .query_row(params![consumer, id], |row| row.get(0))
        .optional()?
        .unwrap_or(0);
    dead_letter(db, delivery, reason, failures + 1, true, now)?;
    Ok(Outcome::Refused(reason.to_owned()))
}

/// Parks a message that its source has delivered more often than attempts
/// allow, although no failure was counted: the consumer dies while handling
/// it. Its handler is not run again.
pub(super) fn park<R: Registry>(
    db: &Connection,
    delivery: &Delivery<'_, R>,
    now: i64,
) -> Result<Outcome, StorageError> {
    let error = format!(
        "delivered {} times without an outcome: the consumer may die while handling it",
        delivery.delivered
    );
    dead_letter(db, delivery, &error, delivery.delivered, false, now)?;
    Ok(Outcome::DeadLettered(error))
}

/// Moves a message to `dead_letters`, with its inbox row so that
/// redeliveries are duplicates, and forgets its attempt count.
fn dead_letter<R: Registry>(
    db: &Connection,
    delivery: &Delivery<'_, R>,
    error: &str,
    attempts: u32,
    refused: bool,
    now: i64,
) -> Result<(), StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    let (event_type, payload) = R::encode(&delivery.message.event);
    db.prepare_cached(
        "INSERT OR REPLACE INTO dead_letters
            (consumer, message_id, event_type, payload, error, attempts, refused, dead_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        consumer, id, event_type, payload, error, attempts, refused, now
    ])?;
    db.prepare_cached(
        "INSERT OR IGNORE INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![consumer, id, now])?;
    db.prepare_cached("DELETE FROM attempts WHERE consumer = ?1 AND message_id = ?2")?
        .execute(params![consumer, id])?;
    if refused {
        tracing::info!(consumer, message_id = id, %error, "message refused by its handler");
    } else {
        tracing::error!(consumer, message_id = id, attempts, %error, "message dead-lettered");
    }
    Ok(())
}

/// Every dead letter, oldest first.
pub(super) fn dead_letters(db: &Connection) -> Result<Vec<DeadLetter>, StorageError> {
    let mut statement = db.prepare(
        "SELECT consumer, message_id, event_type, payload, error, attempts, refused, dead_at
         FROM dead_letters ORDER BY dead_at, consumer, message_id",
    )?;
    let rows = statement.query_map([], |row| {
        Ok(DeadLetter {
            consumer: row.get(0)?,
            message_id: row.get(1)?,
            event_type: row.get(2)?,
            payload: row.get(3)?,
            error: row.get(4)?,
            attempts: row.get(5)?,
            refused: row.get(6)?,
            dead_at: row.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Failures counted so far for one delivery (0 if none).
pub(super) fn failures(
    db: &Connection,
    consumer: &str,
    message_id: &str,
) -> Result<u32, StorageError> {
    Ok(db
        .query_row(
            "SELECT failures FROM attempts WHERE consumer = ?1 AND message_id = ?2",
            params![consumer, message_id],
            |row| row.get(0),
        )
        .optional()?
        .unwrap_or_default())
}

/// Removes a dead letter's traces so that it can be delivered afresh: its
/// inbox row and its attempt count. Part of a re-drive transaction.
pub(super) fn forget(db: &Connection, consumer: &str, message_id: &str) -> rusqlite::Result<()> {
    db.prepare_cached("DELETE FROM inbox WHERE consumer = ?1 AND message_id = ?2")?
        .execute(params![consumer, message_id])?;
    db.prepare_cached("DELETE FROM attempts WHERE consumer = ?1 AND message_id = ?2")?
        .execute(params![consumer, message_id])?;
    Ok(())
}

/// Deletes a dead letter once its re-drive applied.
pub(super) fn bury(db: &Connection, consumer: &str, message_id: &str) -> rusqlite::Result<()> {
    db.prepare_cached("DELETE FROM dead_letters WHERE consumer = ?1 AND message_id = ?2")?
        .execute(params![consumer, message_id])?;
    Ok(())
}
