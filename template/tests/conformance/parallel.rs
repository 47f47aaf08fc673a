//! Parallel: four workers, each on its own connection, released together,
//! each deliver the same 50 payments.
//!
//! A parallel result can differ from run to run, so `scripts/stress.sh`
//! repeats these tests; `STRESS_WORKERS` and `STRESS_MESSAGES` make them
//! harder (defaults 4 and 50).

use crate::support::harness::{RealInbox, parallel};
use crate::support::subjects::{ACCOUNT, AMOUNT, DebitSubject, NotifySubject, OPENING_BALANCE};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|value| {
            value
                .parse()
                .unwrap_or_else(|_| panic!("{name} must be a number"))
        })
        .unwrap_or(default)
}

fn workers() -> usize {
    knob("STRESS_WORKERS", 4)
}

fn messages() -> usize {
    knob("STRESS_MESSAGES", 50)
}

#[test]
fn debits_each_payment_once_across_workers() {
    let (workers, messages) = (workers(), messages());
    for inbox in RealInbox::ALL {
        let observed =
            parallel(&DebitSubject, &inbox, workers, messages).unwrap_or_else(|v| panic!("{v}"));
        let expected = OPENING_BALANCE - AMOUNT * messages as i64;
        assert_eq!(observed.state, vec![(ACCOUNT, expected)]);
        assert_eq!(observed.inbox_rows, messages);
        assert_eq!(
            observed.outcomes.failed, 0,
            "a contended lock is not a failure"
        );
    }
}

#[test]
fn notifies_each_payment_once_across_workers() {
    let (workers, messages) = (workers(), messages());
    let observed = parallel(
        &NotifySubject::real(),
        &RealInbox::ONE_PER_TRANSACTION,
        workers,
        messages,
    )
    .unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(observed.state.len(), 2 * messages);
}
