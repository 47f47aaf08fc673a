//! The consumer as it was found, then the stubs its new tests needed to
//! compile (they do nothing yet).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use crate::{Ack, BUSINESS_SCHEMA, DeadLetter, Delivery, reserve};

pub struct Reserver {
    db: Connection,
}

impl Reserver {
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let db = Connection::open(path)?;
        db.busy_timeout(Duration::from_secs(10))?;
        db.execute_batch(BUSINESS_SCHEMA)?;
        db.execute_batch("CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)")?;
        Ok(Self { db })
    }

    pub fn on_message(&mut self, delivery: &Delivery) -> Ack {
        // Remember the message first, so that a redelivery can never
        // reserve twice.
        let recorded = self.db.execute(
            "INSERT INTO processed (message_id) VALUES (?1)",
            [&delivery.message_id],
        );
        match recorded {
            Ok(_) => {}
            Err(error) if error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                return Ack::Ack; // seen before
            }
            Err(_) => return Ack::Nak,
        }
        match self.reserve_in_transaction(delivery) {
            Ok(()) => Ack::Ack,
            Err(error) => {
                eprintln!("message {} failed: {error}", delivery.message_id);
                Ack::Nak
            }
        }
    }

    fn reserve_in_transaction(&mut self, delivery: &Delivery) -> rusqlite::Result<()> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        reserve(&tx, delivery)?;
        tx.commit()
    }

    // Stubs added with the required tests, so that they compile.

    pub fn dead_letters(&self) -> rusqlite::Result<Vec<DeadLetter>> {
        Ok(Vec::new())
    }

    /// Moves the old dedup records into the inbox.
    pub fn migrate(&mut self) -> rusqlite::Result<()> {
        Ok(())
    }

    /// Ids recorded as processed whose reservation never happened.
    pub fn lost_messages(&self) -> rusqlite::Result<Vec<String>> {
        Ok(Vec::new())
    }
}
