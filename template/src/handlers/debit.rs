//! `debit`: subtracts each captured payment from its account's balance.
//!
//! This is the classic bank-account example of the inbox pattern. Applying a payment twice is the
//! classic double debit, so this handler is what the run-twice and parallel
//! tests watch. The ledger allows overdrafts on purpose: a double debit then
//! shows up as a wrong balance instead of an error.

use rusqlite::{Connection, OptionalExtension, params};

use crate::event::Event;
use crate::handler::{Handler, HandlerError};
use crate::message::Message;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS accounts (
    id      INTEGER PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (typeof(balance) = 'integer')
);";

/// The `debit` consumer.
pub struct Debit;

/// A payment for an account that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("account {0} does not exist")]
pub struct UnknownAccount(pub i64);

impl Handler for Debit {
    fn consumer(&self) -> &'static str {
        "debit"
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        matches!(event, Event::PaymentCaptured(_))
    }

    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn apply(&self, db: &Connection, message: &Message) -> Result<(), HandlerError> {
        match &message.event {
            Event::PaymentCaptured(payment) => {
                let changed = db
                    .prepare_cached("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2")?
                    .execute(params![payment.amount, payment.account])?;
                if changed == 0 {
                    return Err(UnknownAccount(payment.account).into());
                }
                Ok(())
            }
        }
    }
}

/// Creates an account, or resets the balance of an existing one.
pub fn open_account(db: &Connection, account: i64, balance: i64) -> rusqlite::Result<()> {
    db.execute(
        "INSERT INTO accounts (id, balance) VALUES (?1, ?2)
         ON CONFLICT (id) DO UPDATE SET balance = excluded.balance",
        params![account, balance],
    )?;
    Ok(())
}

/// The balance of one account, if it exists.
pub fn balance(db: &Connection, account: i64) -> rusqlite::Result<Option<i64>> {
    db.query_row(
        "SELECT balance FROM accounts WHERE id = ?1",
        [account],
        |row| row.get(0),
    )
    .optional()
}

/// Every account and its balance, by account id.
pub fn balances(db: &Connection) -> rusqlite::Result<Vec<(i64, i64)>> {
    let mut statement = db.prepare("SELECT id, balance FROM accounts ORDER BY id")?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}
