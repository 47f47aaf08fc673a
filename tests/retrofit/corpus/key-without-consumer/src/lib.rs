//! Two consumers of one order event that inbox-kit did not generate, as a
//! retrofit would find them, next to their reference retrofit.
//!
//! **Shape.** rusqlite; a `Consumer` trait with two implementations,
//! `Billing` (revenue and an invoice) and `Shipping` (a shipment), and one
//! `dispatch` function that runs a consumer on a message inside a
//! transaction. An error from `dispatch` is a nack: the broker redelivers.
//!
//! **Flaw.** The dedup table is keyed by the message id alone. The
//! insert-first, one-transaction design is otherwise right, so run twice,
//! parallel and failure then redelivery all pass; but whichever consumer
//! records an order first hides it from the other one, which acknowledges
//! it as a duplicate and never ships (or never bills).
//!
//! **Retrofit.** The inbox keyed by (consumer, message id); failures
//! counted per consumer and dead-lettered at the third; `migrate` gives
//! each old id to the consumers whose own rows show they applied it, and
//! `skipped_messages` reports the orders a consumer never applied.
//!
//! `cargo test` judges the original; `cargo test --features retrofitted`
//! the retrofit. The tests in `tests/required.rs` are the same for both.

use rusqlite::Connection;

#[cfg(not(feature = "retrofitted"))]
mod original;
#[cfg(not(feature = "retrofitted"))]
pub use original::*;

#[cfg(feature = "retrofitted")]
mod retrofit;
#[cfg(feature = "retrofitted")]
pub use retrofit::*;

/// One order event, as the broker delivers it to every consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderPlaced {
    /// The publisher's id, the same for every consumer and redelivery.
    pub message_id: String,
    pub order_id: i64,
    pub total: i64,
}

/// A message one consumer parked after too many failed attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub consumer: String,
    pub order: OrderPlaced,
    pub attempts: u32,
    pub error: String,
}

/// Something that applies an order event. Business code: the retrofit
/// does not touch it.
pub trait Consumer: Sync {
    fn name(&self) -> &'static str;
    /// Runs inside the transaction `dispatch` opened.
    fn apply(&self, db: &Connection, order: &OrderPlaced) -> rusqlite::Result<()>;
}

/// Books the revenue, then writes the invoice.
pub struct Billing;

impl Consumer for Billing {
    fn name(&self) -> &'static str {
        "billing"
    }

    fn apply(&self, db: &Connection, order: &OrderPlaced) -> rusqlite::Result<()> {
        db.execute("UPDATE revenue SET total = total + ?1", [order.total])?;
        db.execute(
            "INSERT INTO invoices (message_id, order_id, total) VALUES (?1, ?2, ?3)",
            (&order.message_id, order.order_id, order.total),
        )?;
        Ok(())
    }
}

/// Writes the shipment.
pub struct Shipping;

impl Consumer for Shipping {
    fn name(&self) -> &'static str {
        "shipping"
    }

    fn apply(&self, db: &Connection, order: &OrderPlaced) -> rusqlite::Result<()> {
        db.execute(
            "INSERT INTO shipments (message_id, order_id) VALUES (?1, ?2)",
            (&order.message_id, order.order_id),
        )?;
        Ok(())
    }
}

/// The business tables, the same before and after the retrofit.
pub const BUSINESS_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS revenue (total INTEGER NOT NULL);
    INSERT INTO revenue (total) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM revenue);
    CREATE TABLE IF NOT EXISTS invoices (
        message_id TEXT    NOT NULL,
        order_id   INTEGER NOT NULL,
        total      INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS shipments (
        message_id TEXT    NOT NULL,
        order_id   INTEGER NOT NULL
    );
";
