//! Key granularity: the inbox key is (consumer, message id), and the
//! notifications table is unique on (event id, channel). Each key blocks
//! the repeat that must be blocked and allows the one that must be allowed.

use std::collections::BTreeMap;

use crate::support::harness::{BothObserved, RealInbox, both_consumers, run_twice};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn both_consumers_apply_the_same_message_id() {
    let BothObserved {
        first: debit,
        second: notify,
    } = both_consumers(
        &DebitSubject,
        &NotifySubject::real(),
        &RealInbox::ONE_PER_TRANSACTION,
        50,
    )
    .unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(debit.state, vec![(ACCOUNT, 500)]);
    assert_eq!(debit.inbox_rows, 50);
    assert_eq!(notify.state.len(), 100);
    assert_eq!(notify.inbox_rows, 50);
}

#[test]
fn fan_out_gives_one_notification_per_channel_and_duplicates_add_none() {
    let observed =
        run_twice(&NotifySubject::real(), &RealInbox::BATCHED, 5).unwrap_or_else(|v| panic!("{v}"));
    let mut channels_per_event: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for notification in &observed.state {
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
