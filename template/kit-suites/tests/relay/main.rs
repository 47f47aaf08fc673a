//! The relay: the outbox's notifications leave the database at least once,
//! each with a key that a receiver's inbox deduplicates on.
//!
//! * `sends`: every row sent with its key, marked sent only after the send;
//!   a failing one retried, then parked (not deleted) and requeued;
//! * `crash`: the relay killed between sending and marking sends again,
//!   and the receiver applies each notification once;
//! * `relays`: two relays at once never send the same row at the same time;
//! * `metrics`: a running relay's scrape agrees with its summary and the outbox;
//! * `teeth`: known-broken relays (marking before sending, a key that
//!   changes on resend, deleting a failing row) are caught;
//! * `traces`: a producer's trace context goes through the inbox to the
//!   relayed notifications.

#[path = "../support/mod.rs"]
mod support;

#[path = "../kit/mod.rs"]
mod kit;

mod crash;
mod metrics;
mod relays;
mod sends;
mod teeth;
mod traces;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::handler::{Handler, HandlerError, Subscriber};
use {{crate_name}}::handlers::{Notification, Notify, Tables};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::relay::lines::to_line;
use {{crate_name}}::relay::{Outgoing, Sent, Sink};

use support::database::Fixture;
use support::harness::{RealInbox, deliver_all, fixture_for, inbox_rows};
use support::subjects::{NotifySubject, payments};

/// A fixture whose outbox holds two notifications (email, push) for each
/// of `count` payments.
fn outbox_with(count: usize) -> Fixture {
    let notify = NotifySubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&notify]);
    let mut inbox = RealInbox::BATCHED.open(&fixture);
    let outcomes = deliver_all(inbox.as_mut(), &Notify, &payments(count));
    assert_eq!(outcomes.applied, count as u64);
    fixture
}

/// The keys every row of a fixture's outbox must be sent under.
fn keys_of(fixture: &Fixture) -> BTreeSet<String> {
    fixture
        .with_tables(|tables| tables.notifications())
        .iter()
        .map(|n| format!("{}:{}", n.channel, n.event_id))
        .collect()
}

/// A sink that keeps every line it was sent (shared, so the test can read
/// it while the relay owns the sink).
#[derive(Clone, Default)]
struct Recorder {
    lines: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Sink<Notification> for Recorder {
    fn send(&mut self, outgoing: &Outgoing) -> Sent {
        self.lines.lock().unwrap().push(to_line(outgoing));
        Sent::Confirmed
    }
}

/// The `id` of a relayed line: the key a receiver deduplicates on.
fn id_of(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
    value["id"].as_str().expect("an id").to_owned()
}

/// The outbox row a relayed line carries, as `channel:event id`.
fn row_of(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
    let payload = &value["payload"];
    format!(
        "{}:{}",
        payload["channel"].as_str().expect("a channel"),
        payload["event_id"].as_str().expect("an event id")
    )
}

/// The key of a line the real relay sent: its row's, checked.
fn key_of(line: &str) -> String {
    let key = id_of(line);
    assert_eq!(key, row_of(line), "a line's key is not its row's");
    key
}

/// A service downstream with an inbox of its own: it applies each relayed
/// notification once, keyed by the line's `id`. Returns (notifications
/// applied, duplicates the inbox caught).
fn receive(lines: &[String]) -> (u64, u64) {
    let fixture = Fixture::new();
    let mut inbox = RealInbox::BATCHED.open(&fixture);
    let messages: Vec<Message> = lines
        .iter()
        .map(|line| Message {
            id: MessageId::new(id_of(line)).expect("a valid key"),
            event: Event::PaymentCaptured(PaymentCaptured {
                account: 1,
                amount: 1,
            }),
            trace_parent: None,
        })
        .collect();
    let outcomes = deliver_all(inbox.as_mut(), &Receiver, &messages);
    assert_eq!(outcomes.failed, 0);
    assert_eq!(
        inbox_rows(&fixture, "receiver") as u64,
        outcomes.applied,
        "the receiver's inbox"
    );
    (outcomes.applied, outcomes.duplicate)
}

/// The receiving service's consumer: records what it received.
struct Receiver;

impl Subscriber<Event> for Receiver {
    fn consumer(&self) -> &'static str {
        "receiver"
    }

    fn subscribes_to(&self, _event: &Event) -> bool {
        true
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for Receiver {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        tables.queue_notification(&Notification {
            event_id: message.id.as_str().to_owned(),
            channel: "received".into(),
            account: 0,
            body: String::new(),
            trace_parent: None,
        })?;
        Ok(())
    }
}
