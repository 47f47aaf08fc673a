//! The relay on NATS: each notification is published once, its key both as
//! `Nats-Msg-Id` and as `Idempotency-Key`, on its channel's subject; a
//! resend (what a relay that died between publishing and marking does) is
//! confirmed as a duplicate and not stored twice.

use std::collections::BTreeSet;
use std::process::Command;

use {{crate_name}}::handlers::Notify;
use {{crate_name}}::relay::nats::NatsSink;
use {{crate_name}}::relay::{Notice, Outgoing, Sent, Sink};

use crate::support::harness::{RealInbox, deliver_all, fixture_for};
use crate::support::nats::Broker;
use crate::support::subjects::{NotifySubject, payments};

#[test]
fn the_relay_publishes_each_notification_once_and_the_stream_absorbs_a_resend() {
    let broker = Broker::new();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&NotifySubject::real()]);
    let mut inbox = RealInbox::BATCHED.open(&fixture);
    deliver_all(inbox.as_mut(), &Notify, &payments(20));
    let notifications = fixture.with_tables(|tables| tables.notifications());
    assert_eq!(notifications.len(), 40, "20 payments x 2 channels");

    let sent = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"))
        .args(fixture.cli_args())
        .args(["relay", "send", "--until-done"])
        .args(broker.relay_cli_args())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&sent.stdout);
    assert!(
        sent.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(
        stdout.contains("sent=40 already_there=0 failed=0 parked=0"),
        "{stdout}"
    );

    let prefix = broker.relay_options().subject_prefix;
    let relayed = broker.relayed();
    let mut keys = BTreeSet::new();
    for message in &relayed {
        let body: serde_json::Value = serde_json::from_str(&message.body).expect("a JSON body");
        let channel = body["payload"]["channel"].as_str().expect("a channel");
        let event_id = body["payload"]["event_id"].as_str().expect("an event id");
        let key = format!("{channel}:{event_id}");
        assert_eq!(message.msg_id, key, "{message:?}");
        assert_eq!(message.idempotency_key, key, "{message:?}");
        assert_eq!(body["id"], key.as_str(), "{message:?}");
        assert_eq!(message.subject, format!("{prefix}.{channel}"));
        keys.insert(key);
    }
    assert_eq!(relayed.len(), 40, "each notification stored once");
    assert_eq!(keys.len(), 40, "under 40 distinct keys");

    // The relay died after publishing, before marking: the next one sends
    // every row again.
    let options = broker.relay_options();
    let mut sink = broker
        .block_on(NatsSink::connect(&options))
        .expect("connect");
    for notification in notifications {
        let outgoing = Outgoing {
            key: notification.idempotency_key(),
            notification,
            failures: 0,
        };
        assert!(
            matches!(sink.send(&outgoing), Sent::AlreadyThere),
            "a resend of {} was stored again",
            outgoing.key
        );
    }
    assert_eq!(broker.relayed().len(), 40, "resends are not stored");
}
