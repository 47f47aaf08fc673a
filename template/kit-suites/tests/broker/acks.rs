//! Acknowledgements: sent only after commit, and their loss is harmless.
//! An acknowledgement that never arrives, a batch the database refused, a
//! handler slower than the ack wait: each ends in the once-only state.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Sender;

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, Subscriber};
use {{crate_name}}::handlers::{AnyHandler, Debit, Handlers, Notify, Tables};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, Policy, StorageError, StorageFault};
use {{crate_name}}::message::Message;
use {{crate_name}}::source::{Incoming, Source, Stop};
use {{crate_name}}::store::Store;

use crate::support::harness::{RealInbox, assert_applied_once, fixture_for, inbox_rows};
use crate::support::nats::Broker;
use crate::support::subjects::{DebitSubject, NotifySubject, payments};
use crate::{consume_until_drained, real_inbox};

fn handlers() -> Vec<Arc<AnyHandler>> {
    vec![Arc::new(Debit), Arc::new(Notify)]
}

/// A source whose acknowledgements for `lost` message ids are dropped the
/// first time: the handle is thrown away unsettled, as if the ack never
/// reached the broker.
struct LosesAcks {
    inner: Box<dyn Source<Event>>,
    lost: Mutex<HashSet<String>>,
}

impl Source<Event> for LosesAcks {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming>>, stop: &Stop) -> anyhow::Result<u64> {
        let (inner_chunks, received) = crossbeam_channel::bounded(16);
        let Self { inner, lost } = *self;
        // The JetStream source blocks on the runtime it was started in.
        let runtime = tokio::runtime::Handle::current();
        std::thread::scope(|scope| {
            // Moved in, so that the channel closes when the inner source ends.
            let reading = scope.spawn(move || {
                let _entered = runtime.enter();
                inner.run(&inner_chunks, stop)
            });
            for chunk in received {
                let chunk = chunk
                    .into_iter()
                    .map(|incoming| {
                        let id = incoming.message.id.as_str().to_owned();
                        if lost.lock().unwrap().remove(&id) {
                            // Settling a handle that never acknowledges.
                            Incoming {
                                ack: Box::new(Lost(Some(incoming.ack))),
                                ..incoming
                            }
                        } else {
                            incoming
                        }
                    })
                    .collect();
                if chunks.send(chunk).is_err() {
                    break;
                }
            }
            reading.join().expect("the inner source")
        })
    }
}

/// An acknowledgement lost on its way: the real handle is dropped unsettled.
struct Lost(Option<Box<dyn {{crate_name}}::source::Acknowledge>>);

impl {{crate_name}}::source::Acknowledge for Lost {
    fn settle(mut self: Box<Self>, _verdict: {{crate_name}}::source::Verdict) {
        drop(self.0.take());
    }
}

#[test]
fn lost_acknowledgements_bring_committed_messages_back_as_duplicates() {
    let broker = Broker::new();
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit, &notify]);
    let messages = payments(30);
    for message in &messages {
        broker.publish(message, message.id.as_str());
    }
    let lost: HashSet<String> = messages
        .iter()
        .step_by(3)
        .map(|message| message.id.as_str().to_owned())
        .collect();
    let policy = Policy::default();
    let seen = consume_until_drained(
        &broker,
        handlers(),
        real_inbox(&fixture, policy),
        Duration::from_secs(1),
        |source| {
            Box::new(LosesAcks {
                inner: source,
                lost: Mutex::new(lost),
            })
        },
    );
    println!("{seen:?}");
    assert!(
        seen.redelivered >= 10,
        "the 10 messages whose ack was lost must come back: {seen:?}"
    );
    assert!(
        seen.report.summary.duplicate >= 20,
        "and be duplicates for both consumers: {:?}",
        seen.report.summary
    );
    assert_applied_once(&fixture, &debit, &messages);
    assert_applied_once(&fixture, &notify, &messages);
    assert_eq!(inbox_rows(&fixture, "debit"), 30);
}

/// The real inbox, except that its first batches fail as if the database
/// were gone.
struct FailsFirstBatches<I> {
    inner: I,
    left: Arc<Mutex<u32>>,
}

impl<I: Inbox<Handlers>> Inbox<Handlers> for FailsFirstBatches<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let mut left = self.left.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            return Err(StorageError::new(
                StorageFault::Unavailable,
                "injected: the database is gone",
            ));
        }
        drop(left);
        self.inner.deliver_batch(batch)
    }
}

#[test]
fn a_storage_error_acknowledges_nothing_and_the_broker_redelivers() {
    let broker = Broker::new();
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit, &notify]);
    let messages = payments(20);
    for message in &messages {
        broker.publish(message, message.id.as_str());
    }
    let policy = Policy::default();
    let database = fixture.database();
    let left = Arc::new(Mutex::new(3));
    let seen = consume_until_drained(
        &broker,
        handlers(),
        move || {
            Ok(FailsFirstBatches {
                inner: database.inbox(policy)?,
                left: left.clone(),
            })
        },
        Duration::from_secs(1),
        |source| source,
    );
    println!("{seen:?}");
    assert!(
        seen.report.summary.failed > 0,
        "no batch failed: {:?}",
        seen.report.summary
    );
    assert!(
        seen.redelivered > 0,
        "the failed batches' messages were not redelivered: {seen:?}"
    );
    assert_applied_once(&fixture, &debit, &messages);
    assert_applied_once(&fixture, &notify, &messages);
}

/// `debit`, taking `delay` over one message.
struct Slow {
    id: String,
    delay: Duration,
    done: AtomicBool,
}

impl Subscriber<Event> for Slow {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for Slow {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        if message.id.as_str() == self.id && !self.done.swap(true, Ordering::SeqCst) {
            std::thread::sleep(self.delay);
        }
        Debit.apply(tables, message)
    }
}

#[test]
fn a_handler_slower_than_the_ack_wait_keeps_its_message_with_progress() {
    let broker = Broker::new();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(5);
    for message in &messages {
        broker.publish(message, message.id.as_str());
    }
    // Progress goes out after a third of the ack wait: the other two
    // thirds (2 s) are the slack a loaded machine has to send it in time.
    let ack_wait = Duration::from_secs(3);
    let slow = Slow {
        id: messages[2].id.as_str().to_owned(),
        delay: ack_wait * 3,
        done: AtomicBool::new(false),
    };
    let policy = Policy::default();
    let seen = consume_until_drained(
        &broker,
        vec![Arc::new(slow)],
        real_inbox(&fixture, policy),
        ack_wait,
        |source| source,
    );
    println!("{seen:?}");
    assert_eq!(
        seen.redelivered, 0,
        "a message in progress was redelivered: {seen:?}"
    );
    assert_eq!(seen.report.summary.applied, 5);
    assert_applied_once(&fixture, &debit, &messages);
}
