//! The example handlers as harness subjects: where each starts, which
//! messages it gets, how its state is read back, and what that state must
//! be (the model).

use std::collections::BTreeMap;
use std::sync::Arc;

use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::handler::Handler;
use {{crate_name}}::handlers::{CHANNELS, Debit, Debited, Notification, Notify, Tables};
use {{crate_name}}::inbox::StorageError;
use {{crate_name}}::message::{Message, MessageId};

use super::harness::{AnySubject, Subject};

/// Every consumer's subject. Each handler registered in `handlers::all()`
/// must have one here: a required test checks it, and runs every required
/// scenario for each.
pub fn all() -> Vec<Box<dyn AnySubject>> {
    vec![
        Box::new(DebitSubject::real()),
        Box::new(NotifySubject::real()),
    ]
}

/// The account every payment debits.
pub const ACCOUNT: i64 = 1;
/// Its balance before any payment.
pub const OPENING_BALANCE: i64 = 1_000;
/// What each payment takes.
pub const AMOUNT: i64 = 10;

/// `count` distinct payments of [`AMOUNT`] from [`ACCOUNT`], with ids fixed
/// as a sender would fix them.
pub fn payments(count: usize) -> Vec<Message> {
    (1..=count)
        .map(|n| Message {
            id: MessageId::new(format!("pay-{n:05}")).expect("valid id"),
            event: Event::PaymentCaptured(PaymentCaptured {
                account: ACCOUNT,
                amount: AMOUNT,
            }),
        })
        .collect()
}

/// The payment in `message`.
fn payment(message: &Message) -> &PaymentCaptured {
    message.event.payment_captured().expect("a payment")
}

/// `message` resent under its id with `change` applied to its payment.
fn resent(message: &Message, change: impl FnOnce(&mut PaymentCaptured)) -> Message {
    let mut payment = payment(message).clone();
    change(&mut payment);
    Message {
        id: message.id.clone(),
        event: Event::PaymentCaptured(payment),
    }
}

/// What the `debit` consumer owns: balances and the debits behind them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerState {
    pub balances: Vec<(i64, i64)>,
    pub debits: Vec<Debited>,
}

/// The `debit` consumer. The handler is swappable so that broken handlers
/// can be judged with the same subject.
pub struct DebitSubject {
    pub handler: Arc<dyn Handler>,
}

impl DebitSubject {
    pub fn real() -> Self {
        Self {
            handler: Arc::new(Debit),
        }
    }
}

impl Subject for DebitSubject {
    type State = LedgerState;

    fn handler(&self) -> Arc<dyn Handler> {
        self.handler.clone()
    }

    fn seed(&self, tables: &mut dyn Tables) -> Result<(), StorageError> {
        tables.open_account(ACCOUNT, OPENING_BALANCE)
    }

    fn messages(&self, count: usize) -> Vec<Message> {
        payments(count)
    }

    fn state(&self, tables: &mut dyn Tables) -> Result<LedgerState, StorageError> {
        let mut debits = tables.debits()?;
        debits.sort();
        Ok(LedgerState {
            balances: tables.balances()?,
            debits,
        })
    }

    /// The opening balance less every payment; one debit per payment.
    fn expected(&self, applied: &[Message]) -> LedgerState {
        let mut balances = BTreeMap::from([(ACCOUNT, OPENING_BALANCE)]);
        let mut debits = Vec::new();
        for message in applied {
            let payment = payment(message);
            *balances.entry(payment.account).or_default() -= payment.amount;
            debits.push(Debited {
                payment_id: message.id.as_str().to_owned(),
                account: payment.account,
                amount: payment.amount,
            });
        }
        debits.sort();
        LedgerState {
            balances: balances.into_iter().collect(),
            debits,
        }
    }

    /// The same payment with another amount (same account, which exists:
    /// the ledger's key, not a missing account, must be what refuses it).
    fn resend(&self, message: &Message) -> Message {
        resent(message, |payment| payment.amount += 1)
    }
}

/// The `notify` consumer: its state is every notification row. The handler
/// is swappable so that broken handlers can be judged with the same
/// subject.
pub struct NotifySubject {
    pub handler: Arc<dyn Handler>,
}

impl NotifySubject {
    pub fn real() -> Self {
        Self {
            handler: Arc::new(Notify),
        }
    }
}

impl Subject for NotifySubject {
    type State = Vec<Notification>;

    fn handler(&self) -> Arc<dyn Handler> {
        self.handler.clone()
    }

    fn seed(&self, _tables: &mut dyn Tables) -> Result<(), StorageError> {
        Ok(())
    }

    fn messages(&self, count: usize) -> Vec<Message> {
        payments(count)
    }

    fn state(&self, tables: &mut dyn Tables) -> Result<Vec<Notification>, StorageError> {
        let mut rows = tables.notifications()?;
        rows.sort();
        Ok(rows)
    }

    /// One notification per payment and channel.
    fn expected(&self, applied: &[Message]) -> Vec<Notification> {
        let mut rows: Vec<Notification> = applied
            .iter()
            .flat_map(|message| {
                let payment = payment(message);
                CHANNELS.iter().map(move |channel| Notification {
                    event_id: message.id.as_str().to_owned(),
                    channel: (*channel).to_owned(),
                    account: payment.account,
                    body: format!("Payment of {} captured", payment.amount),
                })
            })
            .collect();
        rows.sort();
        rows
    }

    /// The same event about another account and amount: every column but
    /// the key differs.
    fn resend(&self, message: &Message) -> Message {
        resent(message, |payment| {
            payment.account += 1;
            payment.amount += 1;
        })
    }
}
