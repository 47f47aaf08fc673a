//! Every event published twice, as two stream messages with different
//! publish ids (so that JetStream's publish-side dedup cannot hide the
//! second), the first attempt at every fifth one failing, four workers.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use {{crate_name}}::handlers::{AnyHandler, Debit, Notify};
use {{crate_name}}::inbox::Policy;

use crate::support::harness::{
    FailFirstAttempt, RealInbox, assert_applied_once, fixture_for, inbox_rows,
};
use crate::support::nats::Broker;
use crate::support::subjects::{DebitSubject, NotifySubject, payments};
use crate::{consume_until_drained, real_inbox};

#[test]
fn events_published_twice_with_failing_first_attempts_apply_once() {
    let broker = Broker::new();
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit, &notify]);
    let messages = payments(50);
    for copy in ["first", "again"] {
        for message in &messages {
            broker.publish(message, &format!("{copy}-{}", message.id));
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
    let policy = Policy::default();
    let seen = consume_until_drained(
        &broker,
        handlers,
        real_inbox(&fixture, policy),
        Duration::from_secs(10),
        |source| source,
    );
    println!("{seen:?}");

    assert_applied_once(&fixture, &debit, &messages);
    assert_applied_once(&fixture, &notify, &messages);
    assert_eq!(inbox_rows(&fixture, "debit"), 50);
    assert_eq!(inbox_rows(&fixture, "notify"), 50);
    let summary = seen.report.summary;
    assert_eq!(summary.applied, 100, "50 events x 2 consumers, once each");
    // Every fifth debit fails at its first attempt. A batch that lost a
    // deadlock to another worker is retried whole, handlers included, so
    // some injected failures can vanish into a retry: at most 10 reach the
    // broker, and each comes back.
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
        "the failed attempts were not redelivered: {seen:?}"
    );
    assert_eq!(seen.unconfirmed, 0);
}
