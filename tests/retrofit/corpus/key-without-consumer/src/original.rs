//! The dispatcher as it was found, then the stubs its new tests needed to
//! compile (they do nothing yet).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::{BUSINESS_SCHEMA, Consumer, DeadLetter, OrderPlaced};

pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let db = Connection::open(path)?;
    db.busy_timeout(Duration::from_secs(10))?;
    db.execute_batch(BUSINESS_SCHEMA)?;
    db.execute_batch("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")?;
    Ok(db)
}

/// Runs `consumer` on `order` once. An error means "nack": the broker
/// delivers the message again.
pub fn dispatch(
    db: &mut Connection,
    consumer: &dyn Consumer,
    order: &OrderPlaced,
) -> rusqlite::Result<()> {
    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let fresh = tx.execute(
        "INSERT OR IGNORE INTO processed (message_id) VALUES (?1)",
        [&order.message_id],
    )? == 1;
    if fresh {
        consumer.apply(&tx, order)?;
    }
    tx.commit()
}

// Stubs added with the required tests, so that they compile.

pub fn dead_letters(_db: &Connection) -> rusqlite::Result<Vec<DeadLetter>> {
    Ok(Vec::new())
}

/// Moves the old dedup records into the inbox.
pub fn migrate(_db: &mut Connection) -> rusqlite::Result<()> {
    Ok(())
}

/// (consumer, message id) of the orders a consumer acknowledged without
/// applying them.
pub fn skipped_messages(_db: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    Ok(Vec::new())
}
