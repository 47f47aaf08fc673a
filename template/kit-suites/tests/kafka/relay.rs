//! The relay on Kafka: each notification produced once to the
//! notifications topic, its `channel:event_id` key both as the record key
//! and as the `idempotency-key` header, and marked sent (so never sent
//! again) only once the broker acknowledged it.

use std::collections::BTreeSet;
use std::process::Command;

use {{crate_name}}::handlers::Notify;

use crate::support::harness::{RealInbox, deliver_all, fixture_for};
use crate::support::kafka::Broker;
use crate::support::subjects::{NotifySubject, payments};

/// `relay send --until-done` to `broker`; its stdout.
fn relay(fixture: &crate::support::database::Fixture, broker: &Broker) -> String {
    let options = broker.relay_options();
    let sent = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"))
        .args(fixture.cli_args())
        .args(["relay", "send", "--until-done", "--brokers"])
        .arg(&options.brokers)
        .arg("--notifications-topic")
        .arg(&options.notifications_topic)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&sent.stdout).into_owned();
    assert!(
        sent.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    stdout
}

#[test]
fn the_relay_produces_each_notification_once_keyed_by_its_idempotency_key() {
    let broker = Broker::start();
    let topic = broker.relay_options().notifications_topic;
    broker.create_topic(&topic, 2);
    let fixture = fixture_for(&RealInbox::BATCHED, &[&NotifySubject::real()]);
    let mut inbox = RealInbox::BATCHED.open(&fixture);
    deliver_all(inbox.as_mut(), &Notify, &payments(20));
    assert_eq!(
        fixture.with_tables(|tables| tables.notifications()).len(),
        40,
        "20 payments x 2 channels"
    );

    let stdout = relay(&fixture, &broker);
    assert!(
        stdout.contains("sent=40 already_there=0 failed=0 parked=0"),
        "{stdout}"
    );
    let records = broker.records(&topic);
    let mut keys = BTreeSet::new();
    for (key, idempotency_key, value) in &records {
        let body: serde_json::Value = serde_json::from_str(value).expect("a JSON value");
        let channel = body["payload"]["channel"].as_str().expect("a channel");
        let event_id = body["payload"]["event_id"].as_str().expect("an event id");
        let expected = format!("{channel}:{event_id}");
        assert_eq!(key, &expected, "{value}");
        assert_eq!(idempotency_key, &expected, "{value}");
        assert_eq!(body["id"], expected.as_str(), "{value}");
        keys.insert(expected);
    }
    assert_eq!(records.len(), 40, "each notification produced once");
    assert_eq!(keys.len(), 40, "under 40 distinct keys");

    // Marked sent once acknowledged: a second relay has nothing to send.
    let again = relay(&fixture, &broker);
    assert!(again.contains("sent=0 "), "{again}");
    assert_eq!(broker.records(&topic).len(), 40, "nothing sent twice");
}
