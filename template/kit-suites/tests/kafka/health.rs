//! The broker's side of `consume --metrics-addr` on Kafka: the pending
//! count a scrape reports is what the group has not committed, as the
//! broker itself counts it, and a stopped broker makes the consumer
//! unready while the gauge keeps its last value.

use {{crate_name}}::handlers::Debit;
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::metrics::Metrics;
use {{crate_name}}::source::BrokerProbe;

use crate::kit::metrics::series;
use crate::support::harness::{RealInbox, assert_applied_once, fixture_for};
use crate::support::kafka::Broker;
use crate::support::subjects::{DebitSubject, payments};
use crate::{GROUP, SourceKind, consume_until_drained, real_inbox};

/// The group's uncommitted records, as one scrape reports them.
const PENDING: &str = "broker_pending_messages";

#[test]
fn the_pending_count_is_what_the_group_has_not_committed() {
    let broker = Broker::start();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let metrics = Metrics::default().probing(Box::new(broker.options(GROUP).probe().unwrap()));
    assert_eq!(series(&metrics.render(), PENDING)[""], 0.0);

    let messages = payments(7);
    for message in &messages {
        broker.publish(message);
    }
    // Nobody in the group has read anything: all seven wait.
    assert_eq!(series(&metrics.render(), PENDING)[""], 7.0);

    let seen = consume_until_drained(
        &broker,
        SourceKind::Real,
        vec![std::sync::Arc::new(Debit)],
        real_inbox(&fixture, Policy::default()),
    );
    assert_eq!(seen.report.summary.applied, 7, "{seen:?}");
    assert_eq!(series(&metrics.render(), PENDING)[""], 0.0);
    assert_applied_once(&fixture, &debit, &messages);
}

#[test]
fn a_probe_of_a_stopped_broker_says_unreachable_and_the_gauge_keeps_its_value() {
    let mut broker = Broker::start();
    for message in &payments(3) {
        broker.publish(message);
    }
    let options = broker.options(GROUP);
    let probe = options.probe().unwrap();
    assert_eq!(probe.pending(), Ok(3));
    let metrics = Metrics::default().probing(Box::new(options.probe().unwrap()));
    assert_eq!(metrics.readiness(), Ok(()));
    assert_eq!(series(&metrics.render(), PENDING)[""], 3.0);

    broker.stop();
    let error = probe.pending().expect_err("the broker is gone");
    assert!(!error.is_empty());
    let unready = metrics.readiness().expect_err("the broker is gone");
    assert!(unready.starts_with("broker unreachable: "), "{unready}");
    let text = metrics.render();
    assert_eq!(series(&text, PENDING)[""], 3.0, "{text}");
    assert_eq!(series(&text, "broker_probe_failures_total")[""], 1.0);
}
