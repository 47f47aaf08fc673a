//! Failure then redelivery: a failed delivery leaves no trace, not even its
//! inbox row, so the broker's redelivery applies it exactly once.

use crate::support::harness::{AFTER_FAILURE, RealInbox, redeliver_after_failure};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn failed_debit_leaves_nothing_and_redelivery_applies_it_once() {
    for inbox in RealInbox::ALL {
        let play = redeliver_after_failure(&DebitSubject::real(), &inbox, 1, |_| true)
            .expect("applied once after the redelivery");
        let after_failure = play.step(AFTER_FAILURE);
        assert_eq!(
            after_failure.state.balances,
            vec![(ACCOUNT, 1_000)],
            "the failed debit is rolled back"
        );
        assert_eq!(after_failure.inbox_rows, 0, "and so is its inbox row");
        assert_eq!(
            play.observed.state.balances,
            vec![(ACCOUNT, 990)],
            "the redelivery applies it once"
        );
        assert_eq!(play.observed.inbox_rows, 1);
    }
}

#[test]
fn a_failure_in_a_batch_rolls_back_only_itself() {
    let play = redeliver_after_failure(&DebitSubject::real(), &RealInbox::BATCHED, 20, |index| {
        index % 2 == 0
    })
    .expect("applied once after the redelivery");
    assert_eq!(
        play.step(AFTER_FAILURE).state.balances,
        vec![(ACCOUNT, 900)],
        "the 10 healthy payments applied"
    );
    assert_eq!(play.step(AFTER_FAILURE).inbox_rows, 10);
    assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 800)]);
}

#[test]
fn failed_notification_is_sent_once_on_redelivery() {
    let play = redeliver_after_failure(
        &NotifySubject::real(),
        &RealInbox::ONE_PER_TRANSACTION,
        5,
        |_| true,
    )
    .expect("applied once after the redelivery");
    assert!(play.step(AFTER_FAILURE).state.is_empty());
    assert_eq!(play.observed.state.len(), 10);
}
