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

use inbox_kit_runtime::storage::StorageError;

use crate::event::{Event, NotSubscribed};
use crate::handler::{Handler, HandlerError, SetBased, Subscriber};
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

    /// Records every debit and lowers each balance by its debits' sum, in
    /// as few statements as the database allows; returns how many debits
    /// it recorded (the ones whose account exists). A payment id recorded
    /// before is a constraint error, as in [`Ledger::debit`].
    fn debit_all(&mut self, debits: &[Debited]) -> Result<usize, StorageError>;

    /// Creates an account, or resets the balance of an existing one.
    fn open_account(&mut self, account: i64, balance: i64) -> Result<(), StorageError>;

    /// Every account and its balance, by account id.
    fn balances(&mut self) -> Result<Vec<(i64, i64)>, StorageError>;

    /// Every debit, by payment id.
    fn debits(&mut self) -> Result<Vec<Debited>, StorageError>;
}

impl Subscriber<Event> for Debit {
    fn consumer(&self) -> &'static str {
        "debit"
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        matches!(event, Event::PaymentCaptured(_))
    }
}

impl<T: Ledger + ?Sized> Handler<Event, T> for Debit {
    fn apply(&self, tables: &mut T, message: &Message) -> Result<(), HandlerError> {
        let debit = Debited::asked_by(message)?;
        if !tables.debit(&debit)? {
            return Err(UnknownAccount(debit.account).into());
        }
        Ok(())
    }

    fn set_based(&self) -> Option<&dyn SetBased<Event, T>> {
        Some(self)
    }
}

/// A batch's debits in one statement (on PostgreSQL): the balances by
/// their sums, the ledger rows all at once. Any account missing fails the
/// whole attempt; the inbox then applies each payment alone, and only the
/// one with the missing account fails.
impl<T: Ledger + ?Sized> SetBased<Event, T> for Debit {
    fn apply_all(&self, tables: &mut T, messages: &[&Message]) -> Result<(), HandlerError> {
        let debits = messages
            .iter()
            .map(|message| Debited::asked_by(message))
            .collect::<Result<Vec<_>, _>>()?;
        let recorded = tables.debit_all(&debits)?;
        if recorded != debits.len() {
            return Err(MissingAccounts(debits.len() - recorded).into());
        }
        Ok(())
    }
}

/// Some payments of a batch name accounts that do not exist.
#[derive(Debug, thiserror::Error)]
#[error("{0} payments of the batch name an account that does not exist")]
struct MissingAccounts(usize);

impl Debited {
    /// The debit a `payment.captured` message asks for.
    pub fn asked_by(message: &Message) -> Result<Self, NotSubscribed> {
        let payment = message
            .event
            .payment_captured()
            .ok_or_else(|| NotSubscribed::from(&message.event))?;
        Ok(Self {
            payment_id: message.id.as_str().to_owned(),
            account: payment.account,
            amount: payment.amount,
        })
    }
}
