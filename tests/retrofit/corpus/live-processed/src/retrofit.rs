//! The reference retrofit: the same functions, with the inbox row
//! inserted first and its unique violation as the duplicate check.
//!
//! A plain `INSERT` into the inbox: a second worker with the same message
//! waits for the first one's transaction, then gets SQLSTATE 23505 (if it
//! committed) or goes on (if it rolled back). The error aborts the
//! transaction, so a duplicate rolls back; so does a failed credit, whose
//! attempt is then counted in a transaction of its own.

use postgres::Client;
use postgres::error::SqlState;

use crate::{BUSINESS_SCHEMA, Credit, DeadLetter, credit};

/// This consumer's half of the inbox key.
pub const CONSUMER: &str = "credits";
/// Failed attempts before a message is dead-lettered.
pub const MAX_ATTEMPTS: i32 = 3;

const INBOX_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS inbox (
        consumer    TEXT        NOT NULL,
        message_id  TEXT        NOT NULL,
        received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
    );
    CREATE TABLE IF NOT EXISTS attempts (
        consumer   TEXT    NOT NULL,
        message_id TEXT    NOT NULL,
        failures   INTEGER NOT NULL,
        last_error TEXT    NOT NULL,
        PRIMARY KEY (consumer, message_id)
    );
    CREATE TABLE IF NOT EXISTS dead_letters (
        consumer   TEXT        NOT NULL,
        message_id TEXT        NOT NULL,
        customer   TEXT        NOT NULL,
        amount     BIGINT      NOT NULL,
        attempts   INTEGER     NOT NULL,
        error      TEXT        NOT NULL,
        dead_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
    );
";

pub fn setup(client: &mut Client) -> Result<(), postgres::Error> {
    client.batch_execute(BUSINESS_SCHEMA)?;
    client.batch_execute(INBOX_SCHEMA)
}

/// Credits at most once. An error means "redeliver"; a message parked as
/// a dead letter is acknowledged.
pub fn handle(client: &mut Client, message: &Credit) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    if let Err(error) = tx.execute(
        "INSERT INTO inbox (consumer, message_id) VALUES ($1, $2)",
        &[&CONSUMER, &message.message_id],
    ) {
        if error.code() == Some(&SqlState::UNIQUE_VIOLATION) {
            return tx.rollback(); // a duplicate
        }
        return Err(error);
    }
    if let Err(error) = credit(&mut tx, message) {
        tx.rollback()?; // the inbox row goes too
        return record_failure(client, message, error);
    }
    tx.execute(
        "DELETE FROM attempts WHERE consumer = $1 AND message_id = $2",
        &[&CONSUMER, &message.message_id],
    )?;
    tx.commit()
}

/// Counts a failed attempt; below the limit the error goes back to the
/// broker, at the limit the message is parked and acknowledged.
fn record_failure(
    client: &mut Client,
    message: &Credit,
    error: postgres::Error,
) -> Result<(), postgres::Error> {
    let text = error
        .as_db_error()
        .map_or_else(|| error.to_string(), |db| db.message().to_owned());
    let mut tx = client.transaction()?;
    let failures: i32 = tx
        .query_one(
            "INSERT INTO attempts (consumer, message_id, failures, last_error) VALUES ($1, $2, 1, $3)
             ON CONFLICT (consumer, message_id) DO UPDATE
                SET failures = attempts.failures + 1, last_error = excluded.last_error
             RETURNING failures",
            &[&CONSUMER, &message.message_id, &text],
        )?
        .get(0);
    if failures < MAX_ATTEMPTS {
        tx.commit()?;
        return Err(error);
    }
    tx.execute(
        "INSERT INTO dead_letters (consumer, message_id, customer, amount, attempts, error)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            &CONSUMER,
            &message.message_id,
            &message.customer,
            &message.amount,
            &failures,
            &text,
        ],
    )?;
    tx.execute(
        "INSERT INTO inbox (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[&CONSUMER, &message.message_id],
    )?;
    tx.execute(
        "DELETE FROM attempts WHERE consumer = $1 AND message_id = $2",
        &[&CONSUMER, &message.message_id],
    )?;
    tx.commit()?;
    eprintln!(
        "{} parked after {failures} attempts: {text}",
        message.message_id
    );
    Ok(())
}

pub fn dead_letters(client: &mut Client) -> Result<Vec<DeadLetter>, postgres::Error> {
    let rows = client.query(
        "SELECT message_id, customer, amount, attempts, error FROM dead_letters
         WHERE consumer = $1 ORDER BY dead_at, message_id",
        &[&CONSUMER],
    )?;
    Ok(rows
        .iter()
        .map(|row| DeadLetter {
            credit: Credit {
                message_id: row.get(0),
                customer: row.get(1),
                amount: row.get(2),
            },
            attempts: row.get(3),
            error: row.get(4),
        })
        .collect())
}

/// Carries `processed` into the inbox, in one transaction with the schema
/// change (PostgreSQL's DDL is transactional): every id the old code
/// recorded is a duplicate from the first delivery the new code sees, and
/// keeps its original time, so retention counts its window from when it
/// was really processed. The table lock makes an old consumer still
/// running wait, then fail on the renamed table instead of recording an id
/// the inbox never sees (its whole transaction rolls back; the broker
/// redelivers to the new code). Running it again does nothing.
pub fn migrate(client: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.batch_execute(INBOX_SCHEMA)?;
    let old_table: bool = tx
        .query_one("SELECT to_regclass('processed') IS NOT NULL", &[])?
        .get(0);
    if old_table {
        tx.batch_execute("LOCK TABLE processed IN EXCLUSIVE MODE")?;
        if cfg!(not(feature = "forget-migration")) {
            tx.execute(
                "INSERT INTO inbox (consumer, message_id, received_at)
                 SELECT $1, message_id, processed_at FROM processed
                 ON CONFLICT DO NOTHING",
                &[&CONSUMER],
            )?;
        }
        tx.batch_execute("ALTER TABLE processed RENAME TO processed_retired")?;
    }
    tx.commit()
}

/// Read-only: message ids credited more than once, with how many times
/// (check-then-act left these behind). For people to settle, never fixed
/// here.
pub fn double_credits(client: &mut Client) -> Result<Vec<(String, i64)>, postgres::Error> {
    let mut tx = client.build_transaction().read_only(true).start()?;
    let rows = tx.query(
        "SELECT message_id, count(*) FROM credit_log
         GROUP BY message_id HAVING count(*) > 1 ORDER BY message_id",
        &[],
    )?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}
