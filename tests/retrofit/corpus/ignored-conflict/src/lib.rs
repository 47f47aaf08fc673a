//! A PostgreSQL loyalty consumer that inbox-kit did not generate, as a
//! retrofit would find it, next to its reference retrofit.
//!
//! **Shape.** The synchronous `postgres` client; one `Loyalty` per
//! connection; `handle` returns an error for the broker to redeliver.
//! Each message awards points: the member's total goes up and a
//! `point_events` row is written.
//!
//! **Flaw.** It has the right table, `inbox (consumer, message_id)`, and
//! the right place, first in the transaction, but
//! `INSERT ... ON CONFLICT DO NOTHING` says "duplicate" by touching zero
//! rows, and nobody reads the count: the award runs every time. Run twice
//! fails; failure then redelivery passes (one transaction).
//!
//! **Retrofit.** `RETURNING 1` tells a claim from a duplicate; failures
//! counted after the rollback (PostgreSQL aborts the whole transaction on
//! any error) and dead-lettered at the third; `double_awards` reports what
//! the ignored conflict already awarded twice, and `migrate` adds the
//! unique key on `point_events` only once there are none.
//!
//! `cargo test` judges the original; `cargo test --features retrofitted`
//! the retrofit. The tests in `tests/required.rs` are the same for both;
//! they need a PostgreSQL server (`DATABASE_URL`).

#[cfg(not(feature = "retrofitted"))]
mod original;
#[cfg(not(feature = "retrofitted"))]
pub use original::*;

#[cfg(feature = "retrofitted")]
mod retrofit;
#[cfg(feature = "retrofitted")]
pub use retrofit::*;

/// One award, as the broker delivers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointsEarned {
    /// The publisher's id, the same on every redelivery.
    pub message_id: String,
    pub member: i64,
    pub points: i64,
}

/// A message parked after too many failed attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub message: PointsEarned,
    pub attempts: i32,
    pub error: String,
}

/// This consumer's half of the inbox key.
pub const CONSUMER: &str = "loyalty";

/// The business tables and the inbox, as found: the same after the
/// retrofit, which only adds tables.
pub const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS members (
        id     BIGINT PRIMARY KEY,
        points BIGINT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS point_events (
        message_id TEXT   NOT NULL,
        member     BIGINT NOT NULL,
        points     BIGINT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS inbox (
        consumer    TEXT        NOT NULL,
        message_id  TEXT        NOT NULL,
        received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (consumer, message_id)
    );
";

/// The business update: the member's total, then the event row.
pub fn award(
    tx: &mut postgres::Transaction<'_>,
    message: &PointsEarned,
) -> Result<(), postgres::Error> {
    tx.execute(
        "UPDATE members SET points = points + $1 WHERE id = $2",
        &[&message.points, &message.member],
    )?;
    tx.execute(
        "INSERT INTO point_events (message_id, member, points) VALUES ($1, $2, $3)",
        &[&message.message_id, &message.member, &message.points],
    )?;
    Ok(())
}
