//! The reference retrofit: the same `Loyalty`, reading what the inbox
//! insert says.
//!
//! `INSERT ... ON CONFLICT (consumer, message_id) DO NOTHING RETURNING 1`
//! returns a row when this delivery claimed the message and none for a
//! duplicate, without aborting the transaction. A second worker inserting
//! the same key waits for the first to end, then sees its outcome. When
//! the award fails, PostgreSQL has aborted the transaction (anything more
//! in it would fail with 25P02): it is rolled back, and the failure is
//! counted in a transaction of its own.

use postgres::{Client, Config, NoTls};

use crate::{CONSUMER, DeadLetter, PointsEarned, SCHEMA, award};

/// Failed attempts before a message is dead-lettered.
pub const MAX_ATTEMPTS: i32 = 3;

const POISON_SCHEMA: &str = "
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
        member     BIGINT      NOT NULL,
        points     BIGINT      NOT NULL,
        attempts   INTEGER     NOT NULL,
        error      TEXT        NOT NULL,
        dead_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
    );
";

pub struct Loyalty {
    client: Client,
}

impl Loyalty {
    pub fn connect(config: &Config) -> Result<Self, postgres::Error> {
        let mut client = config.connect(NoTls)?;
        client.batch_execute(SCHEMA)?;
        client.batch_execute(POISON_SCHEMA)?;
        Ok(Self { client })
    }

    /// Awards the points at most once. An error means "redeliver"; a
    /// message parked as a dead letter is acknowledged.
    pub fn handle(&mut self, message: &PointsEarned) -> Result<(), postgres::Error> {
        let mut tx = self.client.transaction()?;
        let claimed = tx
            .query_opt(
                "INSERT INTO inbox (consumer, message_id) VALUES ($1, $2)
                 ON CONFLICT (consumer, message_id) DO NOTHING
                 RETURNING 1",
                &[&CONSUMER, &message.message_id],
            )?
            .is_some();
        if !claimed {
            return Ok(()); // a duplicate: nothing was written
        }
        if let Err(error) = award(&mut tx, message) {
            tx.rollback()?; // the inbox row goes too
            return self.record_failure(message, error);
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
        &mut self,
        message: &PointsEarned,
        error: postgres::Error,
    ) -> Result<(), postgres::Error> {
        let text = error
            .as_db_error()
            .map_or_else(|| error.to_string(), |db| db.message().to_owned());
        let mut tx = self.client.transaction()?;
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
            "INSERT INTO dead_letters (consumer, message_id, member, points, attempts, error)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &CONSUMER,
                &message.message_id,
                &message.member,
                &message.points,
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

    pub fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, postgres::Error> {
        let rows = self.client.query(
            "SELECT message_id, member, points, attempts, error FROM dead_letters
             WHERE consumer = $1 ORDER BY dead_at, message_id",
            &[&CONSUMER],
        )?;
        Ok(rows
            .iter()
            .map(|row| DeadLetter {
                message: PointsEarned {
                    message_id: row.get(0),
                    member: row.get(1),
                    points: row.get(2),
                },
                attempts: row.get(3),
                error: row.get(4),
            })
            .collect())
    }

    /// Adds the unique key on `point_events` that backs the inbox up, in
    /// one transaction with a check for double awards: while any exist the
    /// key cannot go on, so nothing changes and they are returned for
    /// people to settle. Running it again does nothing.
    pub fn migrate(&mut self) -> Result<Vec<(String, i64)>, postgres::Error> {
        let mut tx = self.client.transaction()?;
        // No award may slip in between the check and the key.
        tx.batch_execute("LOCK TABLE point_events IN SHARE MODE")?;
        let doubles = double_awards_in(&mut tx)?;
        if doubles.is_empty() {
            tx.batch_execute(
                "CREATE UNIQUE INDEX IF NOT EXISTS point_events_once ON point_events (message_id)",
            )?;
            tx.commit()?;
        }
        Ok(doubles)
    }

    /// Read-only: message ids awarded more than once, with how many times.
    pub fn double_awards(&mut self) -> Result<Vec<(String, i64)>, postgres::Error> {
        let mut tx = self.client.build_transaction().read_only(true).start()?;
        double_awards_in(&mut tx)
    }
}

fn double_awards_in(
    tx: &mut postgres::Transaction<'_>,
) -> Result<Vec<(String, i64)>, postgres::Error> {
    Ok(tx
        .query(
            "SELECT message_id, count(*) FROM point_events
             GROUP BY message_id HAVING count(*) > 1 ORDER BY message_id",
            &[],
        )?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}
