//! An inventory consumer that inbox-kit did not generate, as a retrofit
//! would find it, next to its reference retrofit.
//!
//! **Shape.** rusqlite; one `Reserver` per connection; a broker with
//! acknowledgements (JetStream- or RabbitMQ-like) calls `on_message` and
//! gets back `Ack`, `Nak` (deliver again) or `Term` (stop delivering).
//! Each message reserves stock: the stock row goes down, a reservation row
//! is written.
//!
//! **Flaw.** Record-first: the message id is committed to `processed` in a
//! transaction of its own, then the reservation runs in a second one. When
//! the reservation fails, the broker redelivers as asked, but the id is
//! already recorded: the redelivery is acknowledged as a duplicate and the
//! reservation is lost for good. Run twice and parallel both pass.
//!
//! **Retrofit.** The inbox row and the reservation in one transaction;
//! failures counted in `attempts` after the rollback, `Term` with a dead
//! letter at the third; `migrate` carries `processed` into the inbox;
//! `lost_messages` reports the ids record-first recorded but never applied.
//!
//! `cargo test` judges the original; `cargo test --features retrofitted`
//! the retrofit. The tests in `tests/required.rs` are the same for both.

#[cfg(not(feature = "retrofitted"))]
mod original;
#[cfg(not(feature = "retrofitted"))]
pub use original::*;

#[cfg(feature = "retrofitted")]
mod retrofit;
#[cfg(feature = "retrofitted")]
pub use retrofit::*;

/// One reservation request, as the broker delivers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The publisher's id, the same on every redelivery.
    pub message_id: String,
    pub sku: String,
    pub quantity: i64,
}

/// The answer to the broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ack {
    /// Done (or already done): never deliver it again.
    Ack,
    /// Failed: deliver it again later.
    Nak,
    /// Failed for good (it is dead-lettered): stop delivering it.
    Term,
}

/// A message parked after too many failed attempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub delivery: Delivery,
    pub attempts: u32,
    pub error: String,
}

/// The business tables, the same before and after the retrofit.
pub const BUSINESS_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS stock (
        sku       TEXT    PRIMARY KEY,
        available INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS reservations (
        message_id TEXT    NOT NULL,
        sku        TEXT    NOT NULL,
        quantity   INTEGER NOT NULL
    );
";

/// The business update: take the stock, write the reservation.
pub fn reserve(db: &rusqlite::Connection, delivery: &Delivery) -> rusqlite::Result<()> {
    db.execute(
        "UPDATE stock SET available = available - ?1 WHERE sku = ?2",
        (delivery.quantity, &delivery.sku),
    )?;
    db.execute(
        "INSERT INTO reservations (message_id, sku, quantity) VALUES (?1, ?2, ?3)",
        (&delivery.message_id, &delivery.sku, delivery.quantity),
    )?;
    Ok(())
}
