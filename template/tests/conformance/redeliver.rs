//! Failure then redelivery: a failed delivery leaves no trace, not even its
//! inbox row, so the broker's redelivery applies it exactly once.

use crate::support::harness::{RealInbox, Redelivered, redeliver_after_failure};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn failed_debit_leaves_nothing_and_redelivery_applies_it_once() {
    for inbox in RealInbox::ALL {
        let Redelivered {
            after_failure,
            after_redelivery,
        } = redeliver_after_failure(&DebitSubject, &inbox, 1, |_| true)
            .unwrap_or_else(|v| panic!("{v}"));
        assert_eq!(
            after_failure.state,
            vec![(ACCOUNT, 1_000)],
            "the failed debit is rolled back"
        );
        assert_eq!(after_failure.inbox_rows, 0, "and so is its inbox row");
        assert_eq!(
            after_redelivery.state,
            vec![(ACCOUNT, 990)],
            "the redelivery applies it once"
        );
        assert_eq!(after_redelivery.inbox_rows, 1);
    }
}

#[test]
fn a_failure_in_a_batch_rolls_back_only_itself() {
    let Redelivered {
        after_failure,
        after_redelivery,
    } = redeliver_after_failure(&DebitSubject, &RealInbox::BATCHED, 20, |index| {
        index % 2 == 0
    })
    .unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(
        after_failure.state,
        vec![(ACCOUNT, 900)],
        "the 10 healthy payments applied"
    );
    assert_eq!(after_failure.inbox_rows, 10);
    assert_eq!(after_redelivery.state, vec![(ACCOUNT, 800)]);
}

#[test]
fn failed_notification_is_sent_once_on_redelivery() {
    let Redelivered {
        after_failure,
        after_redelivery,
    } = redeliver_after_failure(
        &NotifySubject::real(),
        &RealInbox::ONE_PER_TRANSACTION,
        5,
        |_| true,
    )
    .unwrap_or_else(|v| panic!("{v}"));
    assert!(after_failure.state.is_empty());
    assert_eq!(after_redelivery.state.len(), 10);
}
