//! Key granularity of the inbox: its key is (consumer, message id), so two
//! consumers of one message both apply it; and one event fans out to a
//! notification per channel.

use std::collections::BTreeMap;

use crate::support::harness::{RealInbox, both_consumers, run_twice};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn both_consumers_apply_the_same_message_id() {
    let (debit, notify) = both_consumers(
        &DebitSubject::real(),
        &NotifySubject::real(),
        &RealInbox::ONE_PER_TRANSACTION,
        50,
    )
    .expect("each consumer applies each message once");
    assert_eq!(debit.observed.state.balances, vec![(ACCOUNT, 500)]);
    assert_eq!(debit.observed.inbox_rows, 50);
    assert_eq!(notify.observed.state.len(), 100);
    assert_eq!(notify.observed.inbox_rows, 50);
}

#[test]
fn fan_out_gives_one_notification_per_channel_and_duplicates_add_none() {
    let play = run_twice(&NotifySubject::real(), &RealInbox::BATCHED, 5).expect("applied once");
    let mut channels_per_event: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for notification in &play.observed.state {
        channels_per_event
            .entry(&notification.event_id)
            .or_default()
            .push(&notification.channel);
    }
    assert_eq!(channels_per_event.len(), 5);
    for (event, channels) in channels_per_event {
        assert_eq!(channels, ["email", "push"], "event {event}");
    }
}
