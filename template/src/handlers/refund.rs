//! `refund`: credits refunds back to the account a payment came from.
//!
//! Three rules, each of which the inbox alone cannot keep:
//!
//! * **Each refund once.** A refund has an id of its own, in its payload,
//!   fixed by whoever issued it. The same refund sent again under a new
//!   message id passes the inbox (a new message) and must be stopped by the
//!   refunds table's key, the refund id: a second line of defence that here
//!   does real work.
//! * **Never more than was paid.** The refunds of one payment never add up
//!   to more than its debit. That is a rule across *different* messages: two
//!   refunds of one payment handled at once, by two workers or two
//!   processes, must not both see room for themselves. So the payment is
//!   locked while its refunds are checked (see [`Refunds::refundable`]).
//! * **Only what exists.** A refund of a payment never captured, or to
//!   another account than the payment's, can never apply: it is
//!   [`Refused`], dead-lettered at once instead of retried.

use inbox_kit_runtime::storage::StorageError;

use crate::event::{Event, NotSubscribed};
use crate::handler::{Handler, HandlerError, Refused, Subscriber};
use crate::message::Message;

/// The `refund` consumer.
pub struct Refund;

/// One applied refund, as the refunds table keeps it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Refunded {
    pub refund_id: String,
    pub payment_id: String,
    pub account: i64,
    pub amount: i64,
}

/// What a payment can still give back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refundable {
    /// The account the payment was debited from.
    pub account: i64,
    pub debited: i64,
    /// What its refunds so far add up to.
    pub refunded: i64,
}

/// The refunds table, and what it needs of the ledger.
pub trait Refunds {
    /// The debit of `payment_id` and what was refunded of it so far, `None`
    /// if it was never debited. The payment stays locked until the
    /// delivery's transaction ends, so that no other refund of it is
    /// checked meanwhile (SQLite has one writer anyway; PostgreSQL locks
    /// the debit's row).
    fn refundable(&mut self, payment_id: &str) -> Result<Option<Refundable>, StorageError>;

    /// Records `refund` (unique by refund id) and credits its account;
    /// `Ok(false)` (nothing written) when a refund with this id was
    /// recorded before.
    fn record_refund(&mut self, refund: &Refunded) -> Result<bool, StorageError>;

    /// Every refund, by refund id.
    fn refunds(&mut self) -> Result<Vec<Refunded>, StorageError>;
}

impl Subscriber<Event> for Refund {
    fn consumer(&self) -> &'static str {
        "refund"
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        matches!(event, Event::PaymentRefunded(_))
    }
}

impl<T: Refunds + ?Sized> Handler<Event, T> for Refund {
    fn apply(&self, tables: &mut T, message: &Message) -> Result<(), HandlerError> {
        let request = message
            .event
            .payment_refunded()
            .ok_or_else(|| NotSubscribed::from(&message.event))?;
        let Some(payment) = tables.refundable(&request.payment_id)? else {
            return Err(Refused::because(format!(
                "payment {} was never captured",
                request.payment_id
            ))
            .into());
        };
        if payment.account != request.account {
            return Err(Refused::because(format!(
                "payment {} came from account {}, not {}",
                request.payment_id, payment.account, request.account
            ))
            .into());
        }
        if payment.refunded + request.amount > payment.debited {
            return Err(Refused::because(format!(
                "refunding {} would bring payment {} to {} refunded of {} captured",
                request.amount,
                request.payment_id,
                payment.refunded + request.amount,
                payment.debited
            ))
            .into());
        }
        let refund = Refunded {
            refund_id: request.refund_id.clone(),
            payment_id: request.payment_id.clone(),
            account: payment.account,
            amount: request.amount,
        };
        if !tables.record_refund(&refund)? {
            return Err(Refused::because(format!(
                "refund {} was credited before",
                refund.refund_id
            ))
            .into());
        }
        Ok(())
    }
}
