//! Settles the server confirmed, checked, not timed: a proxy between the
//! consumer and the server withholds the settle of the first delivery of
//! every third message. The server never confirms those, so the consumer
//! must count exactly them as unconfirmed, and the messages come back as
//! duplicates. A source that acknowledges without waiting for the server
//! is caught on every run: its settles ask for no confirmation, and it
//! counts the withheld ones as done.

use std::sync::Arc;
use std::time::Duration;

use {{crate_name}}::handlers::{AnyHandler, Debit};
use {{crate_name}}::inbox::Policy;

use crate::support::harness::{RealInbox, assert_applied_once, fixture_for};
use crate::support::nats::Broker;
use crate::support::nats::proxy::withhold_first_settle_of_every_third;
use crate::support::subjects::{DebitSubject, payments};
use crate::{Seen, SourceKind, consume_through_proxy, real_inbox};

const MESSAGES: usize = 30;

fn consume_with(source: SourceKind) -> Seen {
    let broker = Broker::new();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(MESSAGES);
    for message in &messages {
        broker.publish(message, message.id.as_str());
    }
    let seen = consume_through_proxy(
        &broker,
        source,
        withhold_first_settle_of_every_third,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, Policy::default()),
        Duration::from_secs(1),
    );
    println!("{seen:?}");
    assert_applied_once(&fixture, &debit, &messages);
    seen
}

#[test]
fn every_settle_is_confirmed_and_a_withheld_one_counts_as_unconfirmed() {
    let seen = consume_with(SourceKind::Real(Box::new(|source| source)));
    assert_eq!(
        seen.settles.withheld,
        (MESSAGES / 3) as u64,
        "the first settle of every third message is withheld: {seen:?}"
    );
    let problems = seen.settle_problems();
    assert!(problems.is_empty(), "{}", problems.join("; "));
    assert!(
        seen.redelivered >= seen.settles.withheld,
        "messages whose settle never arrived come back: {seen:?}"
    );
}

#[test]
fn a_source_that_does_not_wait_for_confirmations_is_caught() {
    let seen = consume_with(SourceKind::FireAndForget);
    let problems = seen.settle_problems();
    assert!(
        !problems.is_empty(),
        "acknowledgements that nothing confirms were not caught: {seen:?}"
    );
    println!("caught: {}", problems.join("; "));
}
