//! The database's faults are never the message's: a storage fault in a
//! handler's own write, a claim that times out waiting for another
//! transaction, or a claim the database refuses (not as a duplicate key),
//! fails the batch and nothing else (no failure counted, no dead letter,
//! no duplicate), and the redelivery applies each message once. Where the
//! database has races to lose, a batch that lost one is first tried again,
//! a bounded number of times.

use crate::support::harness::{
    AFTER_FAULTS, RealImpatient, RealInbox, claim_held_elsewhere, claim_refused, conflicts_retried,
    each_at_once, storage_fault_in_handler,
};
use crate::support::subjects::{ACCOUNT, DebitSubject, RefundSubject};

#[test]
fn a_storage_fault_in_a_handlers_write_is_never_held_against_the_message() {
    for inbox in RealInbox::ALL {
        let play = storage_fault_in_handler(&DebitSubject::real(), &inbox, 10)
            .expect("nothing held against the messages");
        let faulted = play.step(AFTER_FAULTS);
        assert_eq!(faulted.state.balances, vec![(ACCOUNT, 1_000)]);
        assert_eq!(faulted.attempts, 0);
        assert!(faulted.dead_letters.is_empty());
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 900)]);
    }
    storage_fault_in_handler(&RefundSubject::real(), &RealInbox::BATCHED, 10)
        .expect("nothing held against the refunds");
}

#[test]
fn a_claim_held_by_another_transaction_times_out_without_a_verdict() {
    let play = claim_held_elsewhere(&DebitSubject::real(), &RealImpatient, 5)
        .expect("no verdict while the claim was held");
    assert_eq!(play.step(AFTER_FAULTS).outcomes.duplicate, 0);
    assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 950)]);
}

#[test]
fn a_claim_the_database_refuses_is_no_duplicate_and_no_failure() {
    for inbox in RealInbox::ALL {
        let play = claim_refused(&DebitSubject::real(), &inbox, 5)
            .expect("no verdict while the claim was refused");
        assert_eq!(play.step(AFTER_FAULTS).outcomes.duplicate, 0);
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 950)]);
    }
}

#[test]
fn a_batch_that_lost_a_race_is_retried_up_to_its_limit() {
    // Each gives up after the retries' whole backoff (seconds on
    // PostgreSQL): at once, the test waits for one of them, not four.
    let plays = each_at_once(&RealInbox::ALL, |inbox| {
        conflicts_retried(&DebitSubject::real(), inbox)
    });
    for play in plays {
        match play.expect("retried, then given up") {
            Some(play) => assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 940)]),
            None => println!("this database has no races to lose: nothing to retry"),
        }
    }
}
