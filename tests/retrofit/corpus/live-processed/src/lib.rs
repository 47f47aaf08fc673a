//! A PostgreSQL credits consumer that inbox-kit did not generate, with a
//! dedup table full of live ids, as a retrofit would find it, next to its
//! reference retrofit.
//!
//! **Shape.** The synchronous `postgres` client and free functions: `setup`
//! once, then `handle(client, message)` per delivery; an error asks the
//! broker to redeliver. Each message credits a customer and logs it.
//!
//! **Flaw.** Check-then-act that looks safe: in one transaction it runs
//! `SELECT ... FROM processed ... FOR UPDATE`, credits, and records the id
//! with `ON CONFLICT DO NOTHING`. `FOR UPDATE` locks rows that exist; a
//! message not processed yet has no row, so parallel workers all pass the
//! check and all credit. Run twice and failure then redelivery pass.
//!
//! **Live data.** `processed (message_id, processed_at)` holds every id
//! applied so far; the broker may still redeliver any of them.
//!
//! **Retrofit.** The inbox row inserted first, its unique violation
//! (SQLSTATE 23505) the duplicate; failures counted after the rollback and
//! dead-lettered at the third; `migrate` copies `processed` into the inbox
//! with the original times and retires the old table in the same
//! transaction; `double_credits` reports what check-then-act already
//! credited twice.
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

/// One credit, as the broker delivers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credit {
    /// The publisher's id, the same on every redelivery.
    pub message_id: String,
    pub customer: String,
    pub amount: i64,
}

/// A message parked after too many failed attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub credit: Credit,
    pub attempts: i32,
    pub error: String,
}

/// The business tables, the same before and after the retrofit.
pub const BUSINESS_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS balances (
        customer TEXT   PRIMARY KEY,
        credit   BIGINT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS credit_log (
        message_id TEXT   NOT NULL,
        customer   TEXT   NOT NULL,
        amount     BIGINT NOT NULL
    );
";

/// The business update: the balance, then the log row.
pub fn credit(tx: &mut postgres::Transaction<'_>, message: &Credit) -> Result<(), postgres::Error> {
    tx.execute(
        "UPDATE balances SET credit = credit + $1 WHERE customer = $2",
        &[&message.amount, &message.customer],
    )?;
    tx.execute(
        "INSERT INTO credit_log (message_id, customer, amount) VALUES ($1, $2, $3)",
        &[&message.message_id, &message.customer, &message.amount],
    )?;
    Ok(())
}
