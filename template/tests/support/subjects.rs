//! The example handlers as harness subjects: where each starts, which
//! facts it gets, how its state is read back, and what that state must be
//! (the model).

use std::collections::BTreeMap;
use std::sync::Arc;

use {{crate_name}}::event::{Event, PaymentCaptured, PaymentRefunded};
use {{crate_name}}::handlers::{
    AnyHandler, CHANNELS, Debit, Debited, Notification, Notify, Refund, Refunded, Tables,
};
use {{crate_name}}::inbox::StorageError;
use {{crate_name}}::message::{Message, MessageId};

use super::harness::{AnySubject, Model, Subject, ThisProject};

/// Every consumer's subject. Each handler registered in `handlers::all()`
/// must have one here: a required test checks it, and runs every required
/// scenario for each.
pub fn all() -> Vec<Box<dyn AnySubject>> {
    vec![
        Box::new(DebitSubject::real()),
        Box::new(NotifySubject::real()),
        Box::new(RefundSubject::real()),
    ]
}

/// The account every payment debits.
pub const ACCOUNT: i64 = 1;
/// Its balance before any payment.
pub const OPENING_BALANCE: i64 = 1_000;
/// What each payment takes.
pub const AMOUNT: i64 = 10;
/// An account no scenario opens.
pub const NEVER_OPENED: i64 = 999_999;

/// A payment of [`AMOUNT`] from [`ACCOUNT`] under `id`.
pub fn payment(id: MessageId) -> Message {
    Message {
        id,
        event: Event::PaymentCaptured(PaymentCaptured {
            account: ACCOUNT,
            amount: AMOUNT,
        }),
        trace_parent: None,
    }
}

/// `count` distinct payments of [`AMOUNT`] from [`ACCOUNT`], with ids fixed
/// as a sender would fix them (`pay-00001`...).
pub fn payments(count: usize) -> Vec<Message> {
    (1..=count)
        .map(|n| payment(MessageId::new(format!("pay-{n:05}")).expect("valid id")))
        .collect()
}

/// The payment in `message`.
fn captured(message: &Message) -> &PaymentCaptured {
    message.event.payment_captured().expect("a payment")
}

/// `message` resent under its id with `change` applied to its payment.
fn resent(message: &Message, change: impl FnOnce(&mut PaymentCaptured)) -> Message {
    let mut payment = captured(message).clone();
    change(&mut payment);
    Message {
        id: message.id.clone(),
        event: Event::PaymentCaptured(payment),
        trace_parent: None,
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
    pub handler: Arc<AnyHandler>,
}

impl DebitSubject {
    pub fn real() -> Self {
        Self {
            handler: Arc::new(Debit),
        }
    }
}

impl Subject for DebitSubject {
    type Project = ThisProject;
    type State = LedgerState;

    fn handler(&self) -> Arc<AnyHandler> {
        self.handler.clone()
    }

    fn seed(&self, tables: &mut (dyn Tables + '_)) -> Result<(), StorageError> {
        tables.open_account(ACCOUNT, OPENING_BALANCE)
    }

    fn fact(&self, id: MessageId, _n: usize) -> Message {
        payment(id)
    }

    /// A payment from an account that was never opened.
    fn cannot_apply(&self, id: MessageId) -> Option<Message> {
        Some(Message {
            id,
            event: Event::PaymentCaptured(PaymentCaptured {
                account: NEVER_OPENED,
                amount: AMOUNT,
            }),
            trace_parent: None,
        })
    }

    /// The same payment with another amount (same account, which exists:
    /// the ledger's key, not a missing account, must be what refuses it).
    fn resend(&self, message: &Message) -> Message {
        resent(message, |payment| payment.amount += 1)
    }

    /// None: the payment id is the message id, so a new id is a new payment.
    fn repeat(&self, _message: &Message, _id: MessageId) -> Option<Message> {
        None
    }

    fn state(&self, tables: &mut (dyn Tables + '_)) -> Result<LedgerState, StorageError> {
        let mut debits = tables.debits()?;
        debits.sort();
        Ok(LedgerState {
            balances: tables.balances()?,
            debits,
        })
    }

    /// The opening balance less every payment; one debit per payment.
    fn model(&self, messages: &[Message]) -> Model<LedgerState> {
        let mut balances = BTreeMap::from([(ACCOUNT, OPENING_BALANCE)]);
        let mut debits = Vec::new();
        for message in messages {
            let payment = captured(message);
            *balances.entry(payment.account).or_default() -= payment.amount;
            debits.push(Debited {
                payment_id: message.id.as_str().to_owned(),
                account: payment.account,
                amount: payment.amount,
            });
        }
        debits.sort();
        Model::applied(LedgerState {
            balances: balances.into_iter().collect(),
            debits,
        })
    }
}

/// The `notify` consumer: its state is every notification row. The handler
/// is swappable so that broken handlers can be judged with the same
/// subject.
pub struct NotifySubject {
    pub handler: Arc<AnyHandler>,
}

impl NotifySubject {
    pub fn real() -> Self {
        Self {
            handler: Arc::new(Notify),
        }
    }
}

impl Subject for NotifySubject {
    type Project = ThisProject;
    type State = Vec<Notification>;

    fn handler(&self) -> Arc<AnyHandler> {
        self.handler.clone()
    }

    fn seed(&self, _tables: &mut (dyn Tables + '_)) -> Result<(), StorageError> {
        Ok(())
    }

    fn fact(&self, id: MessageId, _n: usize) -> Message {
        payment(id)
    }

    /// The same event about another account and amount: every column but
    /// the key differs.
    fn resend(&self, message: &Message) -> Message {
        resent(message, |payment| {
            payment.account += 1;
            payment.amount += 1;
        })
    }

    /// None: a notification is keyed by its event's message id.
    fn repeat(&self, _message: &Message, _id: MessageId) -> Option<Message> {
        None
    }

    fn state(&self, tables: &mut (dyn Tables + '_)) -> Result<Vec<Notification>, StorageError> {
        let mut rows = tables.notifications()?;
        rows.sort();
        Ok(rows)
    }

    /// One notification per payment and channel.
    fn model(&self, messages: &[Message]) -> Model<Vec<Notification>> {
        let mut rows: Vec<Notification> = messages
            .iter()
            .flat_map(|message| {
                let payment = captured(message);
                CHANNELS.iter().map(move |channel| Notification {
                    event_id: message.id.as_str().to_owned(),
                    channel: (*channel).to_owned(),
                    account: payment.account,
                    body: format!("Payment of {} captured", payment.amount),
                    trace_parent: None,
                })
            })
            .collect();
        rows.sort();
        Model::applied(rows)
    }
}

/// Payments seeded for the `refund` consumer to refund: `captured-00`...
pub const REFUNDABLE_PAYMENTS: usize = 10;
/// What each of them debited: far more than the refunds of any scenario
/// add up to, so that ordinary facts never depend on each other's order.
pub const REFUNDABLE_AMOUNT: i64 = 1_000_000;
/// Payments seeded for the rules-across-messages scenario, one per round:
/// `disputed-00`...
pub const DISPUTED_PAYMENTS: usize = 20;
/// What each disputed payment debited.
pub const DISPUTED_AMOUNT: i64 = 100;
/// The refunds of one disputed payment, delivered at once: 180 in all,
/// the first three (delivered by one process) 150, so that which of them
/// fit in its 100 depends on their order.
pub const DISPUTED_REFUNDS: [i64; 5] = [60, 50, 40, 20, 10];
/// The account every refunded payment came from, and its balance before
/// the seeded payments.
pub const REFUND_ACCOUNT: i64 = 7;
const REFUND_OPENING: i64 = 1_000_000_000;

/// What the `refund` consumer owns: its refunds, and the balances they
/// credit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundState {
    pub balances: Vec<(i64, i64)>,
    pub refunds: Vec<Refunded>,
}

/// The `refund` consumer. The handler is swappable so that broken handlers
/// can be judged with the same subject.
pub struct RefundSubject {
    pub handler: Arc<AnyHandler>,
}

impl RefundSubject {
    pub fn real() -> Self {
        Self {
            handler: Arc::new(Refund),
        }
    }
}

/// The payments the subject seeds: (payment id, amount).
fn seeded_payments() -> Vec<(String, i64)> {
    let refundable =
        (0..REFUNDABLE_PAYMENTS).map(|n| (format!("captured-{n:02}"), REFUNDABLE_AMOUNT));
    let disputed = (0..DISPUTED_PAYMENTS).map(|n| (format!("disputed-{n:02}"), DISPUTED_AMOUNT));
    refundable.chain(disputed).collect()
}

/// The refund in `message`.
fn refund_of(message: &Message) -> &PaymentRefunded {
    message.event.payment_refunded().expect("a refund")
}

fn refund_message(id: MessageId, payment_id: String, account: i64, amount: i64) -> Message {
    Message {
        event: Event::PaymentRefunded(PaymentRefunded {
            refund_id: format!("rf-{id}"),
            payment_id,
            account,
            amount,
        }),
        id,
        trace_parent: None,
    }
}

impl Subject for RefundSubject {
    type Project = ThisProject;
    type State = RefundState;

    fn handler(&self) -> Arc<AnyHandler> {
        self.handler.clone()
    }

    /// The account, and every payment it may refund, debited through the
    /// ledger as the `debit` consumer would have.
    fn seed(&self, tables: &mut (dyn Tables + '_)) -> Result<(), StorageError> {
        tables.open_account(REFUND_ACCOUNT, REFUND_OPENING)?;
        for (payment_id, amount) in seeded_payments() {
            tables.debit(&Debited {
                payment_id,
                account: REFUND_ACCOUNT,
                amount,
            })?;
        }
        Ok(())
    }

    /// A refund with a refund id of its own (`rf-<message id>`): mostly a
    /// small one of a seeded payment, and now and then one that must be
    /// refused whatever the order: of more than its payment debited, of a
    /// payment never captured, to the wrong account.
    fn fact(&self, id: MessageId, n: usize) -> Message {
        let payment = format!("captured-{:02}", n % REFUNDABLE_PAYMENTS);
        let small = 1 + (n % 5) as i64;
        match n % 20 {
            3 | 13 => refund_message(id, payment, REFUND_ACCOUNT, REFUNDABLE_AMOUNT + 1),
            7 | 17 => {
                let never = format!("never-captured-{id}");
                refund_message(id, never, REFUND_ACCOUNT, small)
            }
            19 => refund_message(id, payment, REFUND_ACCOUNT + 1, small),
            _ => refund_message(id, payment, REFUND_ACCOUNT, small),
        }
    }

    /// The same refund (same refund id) with another amount.
    fn resend(&self, message: &Message) -> Message {
        let mut refund = refund_of(message).clone();
        refund.amount += 1;
        Message {
            id: message.id.clone(),
            event: Event::PaymentRefunded(refund),
            trace_parent: None,
        }
    }

    /// The same refund, refund id and all, in a new message.
    fn repeat(&self, message: &Message, id: MessageId) -> Option<Message> {
        Some(Message {
            id,
            event: message.event.clone(),
            trace_parent: None,
        })
    }

    fn state(&self, tables: &mut (dyn Tables + '_)) -> Result<RefundState, StorageError> {
        let mut refunds = tables.refunds()?;
        refunds.sort();
        Ok(RefundState {
            balances: tables.balances()?,
            refunds,
        })
    }

    /// Each refund in turn: refused if its payment was never captured, came
    /// from another account, or would be refunded beyond what it debited;
    /// credited otherwise.
    fn model(&self, messages: &[Message]) -> Model<RefundState> {
        let debited: BTreeMap<String, i64> = seeded_payments().into_iter().collect();
        let mut balance = REFUND_OPENING - debited.values().sum::<i64>();
        let mut refunded: BTreeMap<&str, i64> = BTreeMap::new();
        let mut refunds = Vec::new();
        let mut refused = BTreeMap::new();
        for message in messages {
            let refund = refund_of(message);
            let Some(&paid) = debited.get(&refund.payment_id) else {
                refused.insert(message.id.to_string(), "never captured".to_owned());
                continue;
            };
            if refund.account != REFUND_ACCOUNT {
                refused.insert(message.id.to_string(), "another account".to_owned());
                continue;
            }
            let so_far = refunded.entry(&refund.payment_id).or_default();
            if *so_far + refund.amount > paid {
                refused.insert(message.id.to_string(), "more than was paid".to_owned());
                continue;
            }
            *so_far += refund.amount;
            balance += refund.amount;
            refunds.push(Refunded {
                refund_id: refund.refund_id.clone(),
                payment_id: refund.payment_id.clone(),
                account: REFUND_ACCOUNT,
                amount: refund.amount,
            });
        }
        refunds.sort();
        Model {
            state: RefundState {
                balances: vec![(REFUND_ACCOUNT, balance)],
                refunds,
            },
            refused,
        }
    }

    /// The refunds of disputed payment `round`, together more than it
    /// debited (none beyond the seeded disputed payments).
    fn contended(&self, round: usize) -> Vec<Message> {
        assert!(
            round < DISPUTED_PAYMENTS,
            "only {DISPUTED_PAYMENTS} disputed payments are seeded"
        );
        DISPUTED_REFUNDS
            .iter()
            .enumerate()
            .map(|(k, &amount)| {
                let id = MessageId::new(format!("dispute-{round:02}-{k}")).expect("a valid id");
                refund_message(id, format!("disputed-{round:02}"), REFUND_ACCOUNT, amount)
            })
            .collect()
    }
}
