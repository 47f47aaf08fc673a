//! Dead letters and redrive: a message that always fails is parked at its
//! last attempt with its inbox row (its redeliveries are duplicates), the
//! others apply meanwhile, a redrive that fails again changes nothing, and
//! one with the cause fixed applies it once. A message its source keeps
//! delivering without any outcome (it kills the consumer) is parked unrun
//! after `max_attempts` deliveries, not at them. A refusal after a failure
//! counts both attempts.

use crate::support::harness::{
    CRASH_LOOPED, DEAD_LETTERED, RealDeadLetters, crash_loop, dead_letters, refused_after_a_failure,
};
use crate::support::subjects::{ACCOUNT, DebitSubject, RefundSubject};

#[test]
fn a_poison_message_is_parked_kept_a_duplicate_and_redriven_once() {
    for inbox in RealDeadLetters::ALL {
        let play = dead_letters(&DebitSubject::real(), &inbox).expect("parked and redriven");
        assert_eq!(
            play.step(DEAD_LETTERED).state.balances,
            vec![(ACCOUNT, 970)],
            "the three others applied while the poison one was parked"
        );
        assert_eq!(play.step(DEAD_LETTERED).dead_letters.len(), 1);
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 960)]);
        assert!(play.observed.dead_letters.is_empty());
    }
}

#[test]
fn a_refund_parked_and_redriven_is_credited_once() {
    for inbox in RealDeadLetters::ALL {
        let play = dead_letters(&RefundSubject::real(), &inbox).expect("parked and redriven");
        assert_eq!(play.observed.state.refunds.len(), 4);
    }
}

#[test]
fn a_message_that_kills_its_consumer_is_parked_unrun_after_its_last_chance() {
    for inbox in RealDeadLetters::ALL {
        let play = crash_loop(&DebitSubject::real(), &inbox).expect("parked after its last chance");
        assert_eq!(play.step(CRASH_LOOPED).dead_letters.len(), 1);
        assert_eq!(play.observed.outcomes.duplicate, 2);
    }
}

#[test]
fn a_refund_that_kills_its_consumer_is_parked_unrun() {
    for inbox in RealDeadLetters::ALL {
        let play =
            crash_loop(&RefundSubject::real(), &inbox).expect("parked after its last chance");
        assert_eq!(play.step(CRASH_LOOPED).state.refunds.len(), 1);
    }
}

#[test]
fn a_refund_refused_after_a_failure_counts_both_attempts() {
    for inbox in RealDeadLetters::ALL {
        let play = refused_after_a_failure(&RefundSubject::real(), &inbox)
            .expect("refused with both attempts")
            .expect("the refund subject refuses some of its facts");
        assert_eq!(play.observed.outcomes.refused, 1);
    }
}
