//! `debit`: subtracts each captured payment from its account's balance.
//!
//! Applying a payment twice is the classic double debit, so this handler is
//! what the run-twice and parallel tests watch. The ledger allows overdrafts
//! on purpose: a double debit then shows up as a wrong balance instead of an
//! error.
//!
//! Every debit is also recorded under its payment id, which the ledger keeps
//! unique: a second line of defence behind the inbox. If a repeat ever gets
//! past the inbox (its row purged too early, a bug), the ledger refuses it
//! and the delivery fails loudly instead of taking the money twice. The key
//! is the payment alone: one payment debits once, and two payments from one
//! account are two debits.

use crate::event::{Event, NotSubscribed};
use crate::handler::{Handler, HandlerError};
use crate::handlers::Tables;
use crate::inbox::StorageError;
use crate::message::Message;

/// The `debit` consumer.
pub struct Debit;

/// A payment for an account that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("account {0} does not exist")]
pub struct UnknownAccount(pub i64);

/// One applied debit, as the ledger keeps it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Debited {
    pub payment_id: String,
    pub account: i64,
    pub amount: i64,
}

/// The ledger's tables: account balances and the debits applied to them.
pub trait Ledger {
    /// Records `debit` (unique by payment id) and lowers its account's
    /// balance. `Ok(false)` when the account does not exist (nothing
    /// written); a payment id recorded before is a constraint error.
    fn debit(&mut self, debit: &Debited) -> Result<bool, StorageError>;

    /// Creates an account, or resets the balance of an existing one.
    fn open_account(&mut self, account: i64, balance: i64) -> Result<(), StorageError>;

    /// Every account and its balance, by account id.
    fn balances(&mut self) -> Result<Vec<(i64, i64)>, StorageError>;

    /// Every debit, by payment id.
    fn debits(&mut self) -> Result<Vec<Debited>, StorageError>;
}

impl Handler for Debit {
    fn consumer(&self) -> &'static str {
        "debit"
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        matches!(event, Event::PaymentCaptured(_))
    }

    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
        let payment = message
            .event
            .payment_captured()
            .ok_or_else(|| NotSubscribed::from(&message.event))?;
        let debit = Debited {
            payment_id: message.id.as_str().to_owned(),
            account: payment.account,
            amount: payment.amount,
        };
        if !tables.debit(&debit)? {
            return Err(UnknownAccount(payment.account).into());
        }
        Ok(())
    }
}
