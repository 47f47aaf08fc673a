//! This project's handlers doing the wrong thing. Any handler wrapped to
//! do nothing, to take its refusals for failures or to go under another
//! consumer's name is the test kit's (`DoesNothing`, `ForgetsRefusals`,
//! `Renamed`, re-exported from `support::broken`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use {{crate_name}}::event::{Event, PaymentRefunded};
use {{crate_name}}::handler::{Handler, HandlerError, Refused, SetBased, Subscriber};
use {{crate_name}}::handlers::{AnyHandler, Debit, Debited, Refund, Refunded, Tables};
use {{crate_name}}::message::Message;

use crate::support::debit_variant::{DebitVariant, debit_one};

/// `debit` taking one unit too much from every payment, consistently: the
/// once-only oracle agrees with it (it runs the same handler); caught by
/// the model.
pub struct DebitsTooMuch;

impl Subscriber<Event> for DebitsTooMuch {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for DebitsTooMuch {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let mut payment = message.event.payment_captured().expect("a payment").clone();
        payment.amount += 1;
        let message = Message {
            id: message.id.clone(),
            event: Event::PaymentCaptured(payment),
            trace_parent: None,
        };
        Debit.apply(tables, &message)
    }
}

/// The `refund` payload of a message.
fn refund_request(message: &Message) -> &PaymentRefunded {
    message.event.payment_refunded().expect("a refund")
}

/// `refund` with its cap checked by plain reads (every refund, every
/// debit: SELECTs that lock nothing) before it writes. Two refunds of one
/// payment handled at once each see the room the other is about to take:
/// on PostgreSQL both go through, above what was paid. (On SQLite the
/// delivery's `BEGIN IMMEDIATE` already holds the one write lock, so there
/// it is right.) Caught by the rules across messages.
pub struct CapCheckedWithPlainReads;

impl Subscriber<Event> for CapCheckedWithPlainReads {
    fn consumer(&self) -> &'static str {
        Refund.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Refund.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for CapCheckedWithPlainReads {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let request = refund_request(message);
        let Some(debit) = tables
            .debits()?
            .into_iter()
            .find(|debit| debit.payment_id == request.payment_id)
        else {
            return Err(Refused::because("never captured").into());
        };
        let refunded: i64 = tables
            .refunds()?
            .iter()
            .filter(|refund| refund.payment_id == request.payment_id)
            .map(|refund| refund.amount)
            .sum();
        if debit.account != request.account || refunded + request.amount > debit.amount {
            return Err(Refused::because("refused").into());
        }
        record(tables, request)
    }
}

/// Records `request` as `refund` would.
fn record(tables: &mut dyn Tables, request: &PaymentRefunded) -> Result<(), HandlerError> {
    let refund = Refunded {
        refund_id: request.refund_id.clone(),
        payment_id: request.payment_id.clone(),
        account: request.account,
        amount: request.amount,
    };
    if !tables.record_refund(&refund)? {
        return Err(Refused::because("credited before").into());
    }
    Ok(())
}

/// `refund` keeping what each payment has left to refund in the process's
/// memory (read from the database once, then counted down in Rust, under a
/// mutex): the workers of one process agree, another process has its own
/// count, and between them they refund more than was paid. Caught by the
/// rules across messages, whose second process refunds beside it.
#[derive(Default)]
pub struct CapKeptInMemory {
    /// By payment: its account, and what is left to refund.
    left: Mutex<HashMap<String, (i64, i64)>>,
}

impl Subscriber<Event> for CapKeptInMemory {
    fn consumer(&self) -> &'static str {
        Refund.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Refund.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for CapKeptInMemory {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let request = refund_request(message);
        let mut left = self.left.lock().expect("memory");
        let (account, left) = match left.entry(request.payment_id.clone()) {
            std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
            std::collections::hash_map::Entry::Vacant(first) => {
                let Some(payment) = tables.refundable(&request.payment_id)? else {
                    return Err(Refused::because("never captured").into());
                };
                first.insert((payment.account, payment.debited - payment.refunded))
            }
        };
        if *account != request.account || request.amount > *left {
            return Err(Refused::because("refused").into());
        }
        record(tables, request)?;
        *left -= request.amount;
        Ok(())
    }
}

/// `refund` with no cap at all: every refund is credited, whatever was
/// paid. Caught by the model (a refund of more than its payment is among
/// the ordinary facts, and must be refused).
pub struct NoCap;

impl Subscriber<Event> for NoCap {
    fn consumer(&self) -> &'static str {
        Refund.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Refund.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for NoCap {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let request = refund_request(message);
        if tables.refundable(&request.payment_id)?.is_none() {
            return Err(Refused::because("never captured").into());
        }
        record(tables, request)
    }
}

/// `refund` keyed by the message id instead of the refund id in its
/// payload: the same refund sent again in a new message is credited again.
/// Caught by the business key, which repeats each fact under a new id.
pub struct RefundKeyedByMessageId;

impl Subscriber<Event> for RefundKeyedByMessageId {
    fn consumer(&self) -> &'static str {
        Refund.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Refund.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for RefundKeyedByMessageId {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let mut request = refund_request(message).clone();
        request.refund_id = format!("rf-{}", message.id);
        let message = Message {
            id: message.id.clone(),
            event: Event::PaymentRefunded(request),
            trace_parent: None,
        };
        Refund.apply(tables, &message)
    }
}

/// `refund` crediting twice what was refunded. Caught by the model.
pub struct CreditsTwice;

impl Subscriber<Event> for CreditsTwice {
    fn consumer(&self) -> &'static str {
        Refund.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Refund.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for CreditsTwice {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let mut request = refund_request(message).clone();
        request.amount *= 2;
        let message = Message {
            id: message.id.clone(),
            event: Event::PaymentRefunded(request),
            trace_parent: None,
        };
        Refund.apply(tables, &message)
    }
}

/// The real debit, except that its set-based path trusts the statement:
/// payments whose account does not exist are dropped by the join and the
/// run is reported applied. Caught by the cannot-apply scenario: the
/// payment from an account never opened counts as applied, with an inbox
/// row and no debit.
pub const SKIPS_WHAT_IT_CANNOT_APPLY: DebitVariant = DebitVariant {
    apply: debit_one,
    set_based: Some(&TrustsTheJoin),
};

/// The set-based path of [`SKIPS_WHAT_IT_CANNOT_APPLY`].
struct TrustsTheJoin;

impl<'t> SetBased<Event, dyn Tables + 't> for TrustsTheJoin {
    fn apply_all(
        &self,
        tables: &mut (dyn Tables + 't),
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        let debits: Vec<Debited> = messages
            .iter()
            .filter_map(|message| Debited::asked_by(message).ok())
            .collect();
        tables.debit_all(&debits)?;
        Ok(())
    }
}
