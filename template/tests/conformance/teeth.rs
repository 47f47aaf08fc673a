//! The tests have teeth: each known-broken implementation in
//! `support::broken` is caught by the scenario named in its test, on every
//! run, while the real inbox passes all of them. Where a broken version
//! passes another scenario, the test says so: that is exactly why the three
//! kinds of test carry equal weight.

use std::sync::Arc;

use crate::support::broken::{
    CheckThenAct, DeferredCheck, KeyedByMessageId, MintedId, NoInbox, NotifyUniqueOnEventId,
    RecordFirst,
};
use crate::support::harness::{
    RealInbox, Violation, both_consumers, parallel, redeliver_after_failure, run_twice, suite,
};
use crate::support::subjects::{DebitSubject, NotifySubject};

fn caught<T>(result: Result<T, Violation>, what: &str) {
    match result {
        Ok(_) => panic!("{what} was not caught"),
        Err(violation) => println!("caught: {violation}"),
    }
}

#[test]
fn the_real_inbox_passes_every_scenario() {
    for inbox in RealInbox::ALL {
        let violations = suite(&inbox);
        assert!(violations.is_empty(), "{violations:#?}");
    }
}

#[test]
fn no_inbox_is_caught_by_run_twice() {
    caught(run_twice(&DebitSubject, &NoInbox, 50), "no inbox");
}

#[test]
fn check_then_act_passes_run_twice_but_is_caught_by_parallel() {
    run_twice(&DebitSubject, &CheckThenAct, 50)
        .expect("with one worker the SELECT always sees the earlier commit");
    caught(
        parallel(&DebitSubject, &CheckThenAct, 4, 50),
        "check-then-act",
    );
}

#[test]
fn record_first_passes_run_twice_and_parallel_but_is_caught_by_redelivery() {
    run_twice(&DebitSubject, &RecordFirst, 50).expect("record-first handles plain duplicates");
    parallel(&DebitSubject, &RecordFirst, 4, 50).expect("and parallel ones");
    caught(
        redeliver_after_failure(&DebitSubject, &RecordFirst, 1, |_| true),
        "record-first",
    );
}

#[test]
fn inbox_keyed_by_message_id_alone_is_caught_by_both_consumers() {
    run_twice(&DebitSubject, &KeyedByMessageId, 50).expect("one consumer never notices");
    caught(
        both_consumers(&DebitSubject, &NotifySubject::real(), &KeyedByMessageId, 50),
        "inbox keyed by message id alone",
    );
}

#[test]
fn id_minted_on_receipt_is_caught_by_run_twice() {
    caught(
        run_twice(&DebitSubject, &MintedId, 50),
        "id minted on receipt",
    );
}

#[test]
fn deferred_begin_is_caught_by_parallel() {
    run_twice(&DebitSubject, &DeferredCheck, 50).expect("without contention DEFERRED never fails");
    caught(
        parallel(&DebitSubject, &DeferredCheck, 4, 50),
        "deferred BEGIN",
    );
}

#[test]
fn notifications_unique_on_event_id_alone_is_caught_by_fan_out() {
    let subject = NotifySubject {
        handler: Arc::new(NotifyUniqueOnEventId),
    };
    caught(
        run_twice(&subject, &RealInbox::ONE_PER_TRANSACTION, 5),
        "notifications unique on event_id alone",
    );
}
