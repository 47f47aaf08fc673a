//! Poison messages on PostgreSQL: a message whose handler keeps failing
//! must not be retried forever, and must not disappear either.
//!
//! Each failure is counted in `attempts`, written after the failed
//! delivery's savepoint was rolled back, so the count survives the rollback
//! that undoes everything the attempt did. When a message reaches the
//! configured maximum it moves to `dead_letters` with its payload and last
//! error, and its inbox row is written so that further redeliveries are
//! duplicates. A message its handler refused (see
//! [`crate::handler::Refused`]) is dead-lettered at once, the same way.

use postgres::Statement;

use super::Exec;
use crate::delivery::Delivery;
use crate::handler::{Registry, Subscriber};
use crate::inbox::{DeadLetter, Outcome, Policy};
use crate::storage::StorageError;

/// The statements a failed delivery runs, prepared once per connection.
pub(super) struct PoisonStatements {
    count_failure: Statement,
    dead_letter: Statement,
    failures_so_far: Statement,
    record: Statement,
    forget_attempts: Statement,
}

impl PoisonStatements {
    pub(super) fn prepare(client: &mut impl Exec) -> Result<Self, StorageError> {
        Ok(Self {
            count_failure: client.prepare(
                "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
                 VALUES ($1, $2, 1, $3, $4)
                 ON CONFLICT (consumer, message_id) DO UPDATE
                    SET failures = attempts.failures + 1, last_error = excluded.last_error,
                        last_failed_at = excluded.last_failed_at
                 RETURNING failures",
            )?,
            dead_letter: client.prepare(
                "INSERT INTO dead_letters
                    (consumer, message_id, event_type, payload, error, attempts, refused, dead_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (consumer, message_id) DO UPDATE
                    SET event_type = excluded.event_type, payload = excluded.payload,
                        error = excluded.error, attempts = excluded.attempts,
                        refused = excluded.refused, dead_at = excluded.dead_at",
            )?,
            failures_so_far: client
                .prepare("SELECT failures FROM attempts WHERE consumer = $1 AND message_id = $2")?,
            record: client.prepare(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING",
            )?,
            forget_attempts: client
                .prepare("DELETE FROM attempts WHERE consumer = $1 AND message_id = $2")?,
        })
    }
}

/// Counts a failed attempt and decides what it means: a plain failure
/// (the broker should redeliver) or, at `max_attempts`, a dead letter.
pub(super) fn record_failure<R: Registry>(
    tx: &mut impl Exec,
    statements: &PoisonStatements,
    delivery: &Delivery<'_, R>,
    error: &str,
    now: i64,
    policy: Policy,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    let failures: i32 = tx
        .query_one(&statements.count_failure, &[&consumer, &id, &error, &now])?
        .get(0);
    let failures = failures.unsigned_abs();
    if !policy.exhausted(failures, delivery.delivered) {
        tracing::warn!(consumer, message_id = id, failures, %error, "delivery failed; it will apply on redelivery");
        return Ok(Outcome::Failed(error.to_owned()));
    }
    dead_letter(tx, statements, delivery, error, failures, false, now)?;
    Ok(Outcome::DeadLettered(error.to_owned()))
}

/// Dead-letters a message its handler refused, at once: it would be
/// refused again on every delivery.
pub(super) fn refuse<R: Registry>(
    tx: &mut impl Exec,
    statements: &PoisonStatements,
    delivery: &Delivery<'_, R>,
    reason: &str,
    now: i64,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    let failures = tx
        .query_opt(&statements.failures_so_far, &[&consumer, &id])?
        .map_or(0, |row| row.get::<_, i32>(0).unsigned_abs());
    dead_letter(tx, statements, delivery, reason, failures + 1, true, now)?;
    Ok(Outcome::Refused(reason.to_owned()))
}

/// Parks a message that its source has delivered more often than attempts
/// allow, although no failure was counted: the consumer dies while handling
/// it. Its handler is not run again.
pub(super) fn park<R: Registry>(
    tx: &mut impl Exec,
    statements: &PoisonStatements,
    delivery: &Delivery<'_, R>,
    now: i64,
) -> Result<Outcome, StorageError> {
    let error = format!(
        "delivered {} times without an outcome: the consumer may die while handling it",
        delivery.delivered
    );
    dead_letter(
        tx,
        statements,
        delivery,
        &error,
        delivery.delivered,
        false,
        now,
    )?;
    Ok(Outcome::DeadLettered(error))
}

/// Moves a message to `dead_letters`, with its inbox row so that
/// redeliveries are duplicates, and forgets its attempt count.
fn dead_letter<R: Registry>(
    tx: &mut impl Exec,
    statements: &PoisonStatements,
    delivery: &Delivery<'_, R>,
    error: &str,
    attempts: u32,
    refused: bool,
    now: i64,
) -> Result<(), StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    let (event_type, payload) = R::encode(&delivery.message.event);
    let attempts = i32::try_from(attempts).unwrap_or(i32::MAX);
    tx.execute(
        &statements.dead_letter,
        &[
            &consumer,
            &id,
            &event_type,
            &payload,
            &error,
            &attempts,
            &refused,
            &now,
        ],
    )?;
    tx.execute(&statements.record, &[&consumer, &id, &now])?;
    tx.execute(&statements.forget_attempts, &[&consumer, &id])?;
    if refused {
        tracing::info!(consumer, message_id = id, %error, "message refused by its handler");
    } else {
        tracing::error!(consumer, message_id = id, attempts, %error, "message dead-lettered");
    }
    Ok(())
}

/// Every dead letter, oldest first.
pub(super) fn dead_letters(client: &mut impl Exec) -> Result<Vec<DeadLetter>, StorageError> {
    let rows = client.query(
        "SELECT consumer, message_id, event_type, payload, error, attempts, refused, dead_at
         FROM dead_letters ORDER BY dead_at, consumer, message_id",
        &[],
    )?;
    Ok(rows
        .iter()
        .map(|row| DeadLetter {
            consumer: row.get(0),
            message_id: row.get(1),
            event_type: row.get(2),
            payload: row.get(3),
            error: row.get(4),
            attempts: row.get::<_, i32>(5).unsigned_abs(),
            refused: row.get(6),
            dead_at: row.get(7),
        })
        .collect())
}

/// Failures counted so far for one delivery (0 if none).
pub(super) fn failures(
    client: &mut impl Exec,
    consumer: &str,
    message_id: &str,
) -> Result<u32, StorageError> {
    let row = client.query_opt(
        "SELECT failures FROM attempts WHERE consumer = $1 AND message_id = $2",
        &[&consumer, &message_id],
    )?;
    Ok(row.map_or(0, |row| row.get::<_, i32>(0).unsigned_abs()))
}

/// Removes a dead letter's traces so that it can be delivered afresh: its
/// inbox row and its attempt count. Part of a re-drive transaction.
pub(super) fn forget(
    tx: &mut impl Exec,
    consumer: &str,
    message_id: &str,
) -> Result<(), StorageError> {
    tx.execute(
        "DELETE FROM inbox WHERE consumer = $1 AND message_id = $2",
        &[&consumer, &message_id],
    )?;
    tx.execute(
        "DELETE FROM attempts WHERE consumer = $1 AND message_id = $2",
        &[&consumer, &message_id],
    )?;
    Ok(())
}

/// Deletes a dead letter once its re-drive applied.
pub(super) fn bury(
    tx: &mut impl Exec,
    consumer: &str,
    message_id: &str,
) -> Result<(), StorageError> {
    tx.execute(
        "DELETE FROM dead_letters WHERE consumer = $1 AND message_id = $2",
        &[&consumer, &message_id],
    )?;
    Ok(())
}
