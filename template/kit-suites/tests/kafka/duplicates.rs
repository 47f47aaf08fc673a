//! Every event published twice, as two records (a producer's retry, a
//! republished event: new offsets, the same message id), the first attempt
//! at every fifth one failing, four workers.

use std::collections::HashSet;
use std::sync::Arc;

use {{crate_name}}::handlers::{AnyHandler, Debit, Notify};
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::message::MessageId;

use crate::support::harness::{
    FailFirstAttempt, RealInbox, applied_once_problems, assert_applied_once, fixture_for,
    inbox_rows,
};
use crate::support::kafka::Broker;
use crate::support::subjects::{DebitSubject, NotifySubject, payments};
use crate::{Seen, SourceKind, consume_until_drained, real_inbox};

/// Publishes 50 events twice and consumes them with `kind`; returns what
/// the source saw and what is wrong with the end state.
pub fn published_twice(kind: SourceKind) -> (Seen, Vec<String>) {
    let broker = Broker::start();
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit, &notify]);
    let messages = payments(50);
    for _copy in 0..2 {
        for message in &messages {
            broker.publish(message);
        }
    }
    let failing: HashSet<String> = messages
        .iter()
        .step_by(5)
        .map(|message| message.id.as_str().to_owned())
        .collect();
    let handlers: Vec<Arc<AnyHandler>> = vec![
        Arc::new(FailFirstAttempt::new(Arc::new(Debit), failing)),
        Arc::new(Notify),
    ];
    let seen = consume_until_drained(
        &broker,
        kind,
        handlers,
        real_inbox(&fixture, Policy::default()),
    );
    let mut problems = applied_once_problems(&fixture, &debit, &messages);
    problems.extend(applied_once_problems(&fixture, &notify, &messages));
    (seen, problems)
}

#[test]
fn events_published_twice_with_failing_first_attempts_apply_once() {
    let (seen, problems) = published_twice(SourceKind::Real);
    println!(
        "redeliveries: {}, duplicates: {}, {}",
        seen.redelivered, seen.report.summary.duplicate, seen.report.summary
    );
    assert!(problems.is_empty(), "{}", problems.join("; "));
    let summary = &seen.report.summary;
    assert_eq!(summary.applied, 100, "50 events x 2 consumers, once each");
    assert!(
        (1..=10).contains(&summary.failed),
        "the first attempt at every fifth debit: {summary}"
    );
    assert!(
        summary.duplicate >= 100,
        "every event was stored twice: {summary}"
    );
    assert!(
        seen.redelivered >= summary.failed,
        "the failed attempts were not retried: {seen:?}"
    );
}

#[test]
fn the_header_is_the_message_id_and_the_envelope_id_the_fallback() {
    let broker = Broker::start();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(3);
    // 1: without a header, then with its own id as the header: one message.
    broker.publish_with(&messages[0], None);
    broker.publish(&messages[0]);
    // 2 and 3: different envelopes under one header id: one message,
    // whose id is the header's.
    broker.publish_with(&messages[1], Some("from-the-header"));
    broker.publish_with(&messages[2], Some("from-the-header"));
    let seen = consume_until_drained(
        &broker,
        SourceKind::Real,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, Policy::default()),
    );
    println!("{}", seen.report.summary);
    let mut expected = vec![messages[0].clone(), messages[1].clone()];
    expected[1].id = MessageId::new("from-the-header").unwrap();
    assert_applied_once(&fixture, &debit, &expected);
    assert_eq!(inbox_rows(&fixture, "debit"), 2);
    assert_eq!(seen.report.summary.duplicate, 2, "{}", seen.report.summary);
}
