//! Poison messages on the broker: a message that always fails is written
//! to the dead letters with its payload and error and terminated at the
//! broker (JetStream's own limit would only drop it); one the consumer
//! keeps dying on, without a failure ever counted, is parked by its
//! delivery count.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use {{crate_name}}::envelope::Wire;
use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::handlers::{AnyHandler, Debit, Handlers};
use {{crate_name}}::inbox::{
    DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError, StorageFault,
};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::store::Store;

use crate::support::database::Fixture;
use crate::support::harness::{RealInbox, fixture_for};
use crate::support::nats::Broker;
use crate::support::subjects::{ACCOUNT, DebitSubject, payments};
use crate::{consume_until_drained, real_inbox};

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

fn balances(fixture: &Fixture) -> Vec<(i64, i64)> {
    fixture.with_tables(|tables| tables.balances())
}

#[test]
fn a_message_that_always_fails_is_dead_lettered_and_terminated() {
    let broker = Broker::new();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    broker.publish(&payments(1)[0], "good");
    broker.publish(&poison(), "poison");
    let policy = Policy { max_attempts: 2 };
    let seen = consume_until_drained(
        &broker,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
        Duration::from_secs(2),
        |source| source,
    );
    println!("{seen:?}");
    assert_eq!(seen.terminated, 1, "the poison message was not terminated");
    assert!(seen.redelivered >= 1, "its first failure was not retried");
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
        Event::decode(&letters[0].event_type, &letters[0].payload).unwrap(),
        poison().event
    );
    assert_eq!(balances(&fixture), vec![(ACCOUNT, 990)]);
}

/// The real inbox, except that a batch holding `id` fails (as if the
/// process had died on it) while the broker has delivered it at most
/// `until` times. `passed` collects the delivery counts of the copies of
/// `id` it let through.
struct DiesOn<I> {
    inner: I,
    id: &'static str,
    until: u32,
    passed: Arc<Mutex<Vec<u32>>>,
}

impl<I: Inbox<Handlers>> Inbox<Handlers> for DiesOn<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let dies = batch
            .iter()
            .any(|d| d.message.id.as_str() == self.id && d.delivered <= self.until);
        if dies {
            return Err(StorageError::new(
                StorageFault::Unavailable,
                "injected: died on it",
            ));
        }
        let mut passed = self.passed.lock().expect("delivery counts");
        passed.extend(
            batch
                .iter()
                .filter(|d| d.message.id.as_str() == self.id)
                .map(|d| d.delivered),
        );
        drop(passed);
        self.inner.deliver_batch(batch)
    }
}

#[test]
fn a_message_the_consumer_keeps_dying_on_is_parked_by_its_delivery_count() {
    let broker = Broker::new();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let deadly = payments(2).remove(1);
    broker.publish(&deadly, "deadly");
    let policy = Policy { max_attempts: 2 };
    let database = fixture.database();
    let passed = Arc::new(Mutex::new(Vec::new()));
    let counts = passed.clone();
    let seen = consume_until_drained(
        &broker,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        move || {
            Ok(DiesOn {
                inner: database.inbox(policy)?,
                id: "pay-00002",
                until: policy.max_attempts,
                passed: counts.clone(),
            })
        },
        Duration::from_secs(1),
        |source| source,
    );
    println!("{seen:?}");
    assert_eq!(seen.terminated, 1, "{seen:?}");
    // Copies reach the inbox only once the consumer died on the message
    // `max_attempts` times (the broker's count can be higher still: it
    // also redelivers when an ack wait runs out on a loaded machine). The
    // inbox must park by the count the broker gave the copy it parked.
    let passed = passed.lock().expect("delivery counts").clone();
    assert!(!passed.is_empty(), "no copy reached the inbox");
    let letters = fixture
        .database()
        .inbox(policy)
        .unwrap()
        .dead_letters()
        .unwrap();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert!(
        passed.iter().any(|count| letters[0]
            .error
            .contains(&format!("delivered {count} times without an outcome"))),
        "{} (the copies it got were delivered {passed:?} times)",
        letters[0].error
    );
    assert_eq!(
        balances(&fixture),
        vec![(ACCOUNT, 1_000)],
        "its handler never ran"
    );
}
