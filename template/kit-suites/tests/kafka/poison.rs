//! A message that always fails is written to the dead letters with its
//! payload and error, and its offset passes: the partition moves on. A
//! record whose value is no envelope is rejected and passed.

use std::sync::Arc;

use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::handlers::{AnyHandler, Debit};
use {{crate_name}}::inbox::{DeadLetters, Policy};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::store::Store;

use crate::support::harness::{RealInbox, fixture_for};
use crate::support::kafka::Broker;
use crate::support::subjects::{ACCOUNT, DebitSubject, payments};
use crate::{SourceKind, consume_until_drained, real_inbox};

fn poison() -> Message {
    Message {
        id: MessageId::new("pay-poison").unwrap(),
        event: Event::PaymentCaptured(PaymentCaptured {
            account: 999,
            amount: 10,
        }),
        trace_parent: None,
    }
}

#[test]
fn a_message_that_always_fails_is_dead_lettered_and_its_offset_passes() {
    let broker = Broker::start();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let good = payments(2);
    broker.publish(&good[0]);
    broker.publish(&poison());
    broker.publish_raw(&ACCOUNT.to_string(), "not an envelope", Some("garbage"));
    broker.publish(&good[1]);
    let policy = Policy { max_attempts: 2 };
    let seen = consume_until_drained(
        &broker,
        SourceKind::Real,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
    );
    println!("{seen:?}");
    assert_eq!(
        seen.parked, 1,
        "the poison message was not parked: {seen:?}"
    );
    assert!(seen.redelivered >= 1, "its first failure was not retried");
    assert_eq!(
        seen.report.summary.rejected, 1,
        "the garbage record: {seen:?}"
    );
    let letters = fixture
        .database()
        .inbox(policy)
        .unwrap()
        .dead_letters()
        .unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].message_id, "pay-poison");
    assert_eq!(letters[0].error, "account 999 does not exist");
    assert_eq!(
        fixture.with_tables(|tables| tables.balances()),
        vec![(ACCOUNT, 980)],
        "both good payments applied, once"
    );
}
