//! Sending: every row once, with its key, marked sent only after its send;
//! a failing one retried, then parked (kept, listed) and requeued.

use std::collections::BTreeSet;
use std::time::Duration;

use {{crate_name}}::handlers::Notification;
use {{crate_name}}::meter::Unmetered;
use {{crate_name}}::progress::Progress;
use {{crate_name}}::relay::{
    Outgoing, Queue, RelayPolicy, Sent, Sink, Until, Watch, relay, relay_batch,
};
use {{crate_name}}::stop::Stop;
use {{crate_name}}::store::Store;

use crate::{Recorder, key_of, keys_of, outbox_with};

#[test]
fn every_notification_is_sent_once_with_its_key_and_marked_sent() {
    let fixture = outbox_with(30);
    let mut queue = fixture.database().relay_queue().unwrap();
    let mut sink = Recorder::default();
    let policy = RelayPolicy::default();
    let counts = relay(
        &mut queue,
        &mut sink,
        7,
        policy,
        Watch {
            until: Until::Done,
            stop: &Stop::default(),
            progress: &Progress::default(),
            meter: &Unmetered,
        },
    )
    .unwrap();
    assert_eq!(counts.sent, 60, "30 payments x 2 channels");
    let keys: Vec<String> = sink.lines().iter().map(|line| key_of(line)).collect();
    assert_eq!(keys.len(), 60, "none sent twice");
    assert_eq!(keys.into_iter().collect::<BTreeSet<_>>(), keys_of(&fixture));
    assert_eq!(queue.remaining().unwrap(), 0, "all marked sent");
    let again = relay_batch(&mut queue, &mut sink, 100, policy, &Progress::default()).unwrap();
    assert_eq!(again.sent, 0, "a row marked sent is not sent again");
}

/// Refuses every send of one key.
struct Refuses {
    key: String,
    inner: Recorder,
}

impl Sink<Notification> for Refuses {
    fn send(&mut self, outgoing: &Outgoing) -> Sent {
        if outgoing.key == self.key {
            return Sent::Failed("the receiver refused it".into());
        }
        self.inner.send(outgoing)
    }
}

#[test]
fn a_failing_send_is_retried_then_parked_not_deleted_and_can_be_requeued() {
    let fixture = outbox_with(5);
    let mut queue = fixture.database().relay_queue().unwrap();
    let refused = "push:pay-00003".to_owned();
    let mut sink = Refuses {
        key: refused.clone(),
        inner: Recorder::default(),
    };
    let policy = RelayPolicy {
        max_attempts: 3,
        retry_after: Duration::from_millis(10),
    };
    let counts = relay(
        &mut queue,
        &mut sink,
        4,
        policy,
        Watch {
            until: Until::Done,
            stop: &Stop::default(),
            progress: &Progress::default(),
            meter: &Unmetered,
        },
    )
    .unwrap();
    assert_eq!(
        (counts.sent, counts.failed, counts.parked),
        (9, 2, 1),
        "two failures retried, the third parks it"
    );
    let parked = queue.parked().unwrap();
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].key, refused);
    assert_eq!(parked[0].failures, 3);
    assert_eq!(parked[0].last_error, "the receiver refused it");
    assert!(
        keys_of(&fixture).contains(&refused),
        "a parked row is kept, not deleted"
    );
    assert_eq!(queue.remaining().unwrap(), 0, "parked rows are not sent");

    assert_eq!(queue.requeue(std::slice::from_ref(&refused)).unwrap(), 1);
    let mut healthy = Recorder::default();
    let counts = relay(
        &mut queue,
        &mut healthy,
        4,
        policy,
        Watch {
            until: Until::Done,
            stop: &Stop::default(),
            progress: &Progress::default(),
            meter: &Unmetered,
        },
    )
    .unwrap();
    assert_eq!(counts.sent, 1);
    assert_eq!(key_of(&healthy.lines()[0]), refused);
    assert!(queue.parked().unwrap().is_empty());
}

#[test]
fn retries_wait_longer_each_time_up_to_a_minute() {
    let policy = RelayPolicy {
        max_attempts: 10,
        retry_after: Duration::from_secs(1),
    };
    let waits: Vec<i64> = (1..=8).map(|n| policy.retry_at(0, n) / 1000).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
}

#[test]
fn purge_deletes_sent_notifications_past_the_window_and_keeps_unsent_and_parked_ones() {
    let fixture = outbox_with(8);
    let refused = "push:pay-00002".to_owned();
    let sent = Recorder::default();
    let mut sink = Refuses {
        key: refused.clone(),
        inner: sent.clone(),
    };
    let policy = RelayPolicy {
        max_attempts: 1,
        retry_after: Duration::from_millis(10),
    };
    {
        let mut queue = fixture.database().relay_queue().unwrap();
        // One batch: part of the outbox is sent, one row parked, the rest
        // still waits.
        let counts = relay_batch(&mut queue, &mut sink, 9, policy, &Progress::default()).unwrap();
        assert_eq!((counts.sent, counts.parked), (8, 1));
    }
    let sent_keys: BTreeSet<String> = sent.lines().iter().map(|line| key_of(line)).collect();
    let kept: BTreeSet<String> = keys_of(&fixture).difference(&sent_keys).cloned().collect();
    assert!(kept.contains(&refused));
    assert_eq!(kept.len(), 8, "one parked and seven never taken");

    std::thread::sleep(Duration::from_millis(20));
    let purged = fixture
        .database()
        .purge(Duration::from_millis(10), 3, &mut |_| ())
        .unwrap();
    assert_eq!(
        purged.sent_notifications, 8,
        "every sent row, in batches of 3"
    );
    assert_eq!(keys_of(&fixture), kept, "unsent and parked rows are kept");
}
