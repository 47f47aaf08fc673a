//! The example handlers as harness subjects: where each starts, which
//! messages it gets, and how its state is read back.

use std::sync::Arc;

use rusqlite::Connection;

use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::handler::Handler;
use {{crate_name}}::handlers::{self, Debit, Notification, Notify};
use {{crate_name}}::message::{Message, MessageId};

use super::harness::Subject;

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

/// The `debit` consumer: its state is every account's balance.
pub struct DebitSubject;

impl Subject for DebitSubject {
    type State = Vec<(i64, i64)>;

    fn handler(&self) -> Arc<dyn Handler> {
        Arc::new(Debit)
    }

    fn seed(&self, db: &Connection) {
        handlers::open_account(db, ACCOUNT, OPENING_BALANCE).expect("open account");
    }

    fn messages(&self, count: usize) -> Vec<Message> {
        payments(count)
    }

    fn state(&self, db: &Connection) -> Self::State {
        handlers::balances(db).expect("read balances")
    }
}

/// A `notify` consumer: its state is every notification row. The handler
/// is swappable so that the broken schema can be tested with the same
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

    fn seed(&self, _db: &Connection) {}

    fn messages(&self, count: usize) -> Vec<Message> {
        payments(count)
    }

    fn state(&self, db: &Connection) -> Self::State {
        handlers::notifications(db).expect("read notifications")
    }
}
