//! A trace that follows a message through JetStream: the producer's
//! `traceparent` header reaches the message's `receive` span, the
//! `deliver` span of each consumer and the relay's spans, and the relayed
//! notifications carry it on in their own `traceparent` header. A second
//! copy of the message in the stream (a producer's retry, in a trace of
//! its own) is a duplicate in that trace and causes nothing.

use std::sync::Arc;
use std::time::Duration;

use {{crate_name}}::handlers::{AnyHandler, Debit, Notify};
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::relay::nats::NatsSink;

use crate::support::harness::{RealInbox, fixture_for};
use crate::support::nats::Broker;
use crate::support::relay_rates::relay_until_done;
use crate::support::subjects::{DebitSubject, NotifySubject, payments};
use crate::support::traces::{Producer, problems, record_spans};
use crate::{consume_until_drained, real_inbox};

#[test]
fn a_trace_published_with_a_message_reaches_its_spans_and_relayed_notifications() {
    record_spans();
    let broker = Broker::new();
    let fixture = fixture_for(
        &RealInbox::BATCHED,
        &[&DebitSubject::real(), &NotifySubject::real()],
    );
    let message = payments(1).remove(0);
    let (first, retry) = (Producer::new(), Producer::new());
    broker.publish_traced(&message, "first", &first.traceparent());
    broker.publish_traced(&message, "retry", &retry.traceparent());
    let handlers: Vec<Arc<AnyHandler>> = vec![Arc::new(Debit), Arc::new(Notify)];
    let seen = consume_until_drained(
        &broker,
        handlers,
        real_inbox(&fixture, Policy::default()),
        Duration::from_secs(10),
        |source| source,
    );
    let summary = seen.report.summary;
    assert_eq!((summary.applied, summary.duplicate), (2, 2), "{summary}");

    let mut sink = broker
        .block_on(NatsSink::connect(&broker.relay_options()))
        .expect("connect the relay");
    let counts = relay_until_done(&fixture, &mut sink, 10);
    assert_eq!(counts.sent, 2, "one email, one push");
    let relayed: Vec<String> = broker
        .relayed()
        .into_iter()
        .map(|relayed| relayed.traceparent)
        .collect();

    let id = message.id.as_str();
    let applied = [("debit", "applied"), ("notify", "applied")];
    let found = problems(first, id, &applied, &relayed);
    assert!(found.is_empty(), "the first copy: {}", found.join("; "));
    let duplicates = [("debit", "duplicate"), ("notify", "duplicate")];
    let found = problems(retry, id, &duplicates, &[]);
    assert!(found.is_empty(), "the retry: {}", found.join("; "));
}
