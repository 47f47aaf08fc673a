//! Parallel: four workers, each on its own connection, deliver the same 50
//! payments at the same time, round after round (each round on new ids).
//!
//! A parallel result can differ from run to run, so `scripts/stress.sh`
//! repeats these tests; `STRESS_WORKERS` and `STRESS_MESSAGES` make them
//! harder (defaults 4 and 50), `PARALLEL_ROUNDS` sets the rounds (10, and more until 200
//! messages were delivered by two workers at once: `PARALLEL_RACED_SLICES`).

use crate::support::harness::{RealInbox, parallel, stress_messages, stress_workers};
use crate::support::subjects::{ACCOUNT, AMOUNT, DebitSubject, NotifySubject, OPENING_BALANCE};

#[test]
fn debits_each_payment_once_across_workers() {
    let (workers, messages) = (stress_workers(), stress_messages());
    for inbox in RealInbox::ALL {
        let play = parallel(&DebitSubject::real(), &inbox, workers, messages)
            .expect("applied once across workers");
        let payments = play.messages.len();
        assert_eq!(payments % messages, 0, "whole rounds of {messages}");
        let expected = OPENING_BALANCE - AMOUNT * payments as i64;
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, expected)]);
        assert_eq!(play.observed.inbox_rows, payments);
        assert_eq!(
            play.observed.outcomes.failed, 0,
            "a contended lock is not a failure"
        );
    }
}

#[test]
fn notifies_each_payment_once_across_workers() {
    let (workers, messages) = (stress_workers(), stress_messages());
    let play = parallel(
        &NotifySubject::real(),
        &RealInbox::ONE_PER_TRANSACTION,
        workers,
        messages,
    )
    .expect("applied once across workers");
    assert_eq!(play.observed.state.len(), 2 * play.messages.len());
}
