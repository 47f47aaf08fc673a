//! Generated delivery schedules (proptest): random mixes of duplicates,
//! reorderings, failures on random attempts followed by redelivery, both
//! consumers, batches and restarts. After every step the state must equal
//! the model of each message that some delivery has successfully applied,
//! and after a final redelivery of everything, each message exactly once
//! (by the model and by the once-only oracle).
//! A failing schedule is shrunk to a minimal one and printed.
//!
//! Schedules run on one thread so that they replay and shrink
//! deterministically. That is also why they do not catch check-then-act or
//! the deferred `BEGIN`, which need real concurrency: the parallel scenario
//! catches those.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use {{crate_name}}::handlers::AnyHandler;
use {{crate_name}}::inbox::Delivery;
use {{crate_name}}::message::Message;

use crate::support::broken::{MintedId, NoInbox, RecordFirst};
use crate::support::database::traps::keyed_by_message_id;
use crate::support::harness::{
    AlwaysFail, Expected, InboxUnderTest, Path, RealInbox, Subject, ThisProject, fixture_for,
    inbox_rows, state_of,
};
use crate::support::subjects::{DebitSubject, NotifySubject, payments};

const MESSAGES: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Consumer {
    Debit,
    Notify,
}

#[derive(Clone, Debug)]
enum Step {
    /// One transaction: (consumer, message number, whether this attempt fails).
    Batch(Vec<(Consumer, usize, bool)>),
    /// Close the connection and reopen the database.
    Restart,
}

fn schedules() -> impl Strategy<Value = Vec<Step>> {
    let delivery = (
        prop_oneof![Just(Consumer::Debit), Just(Consumer::Notify)],
        0..MESSAGES,
        prop::bool::weighted(0.25),
    );
    let step = prop_oneof![
        9 => prop::collection::vec(delivery, 1..6).prop_map(Step::Batch),
        1 => Just(Step::Restart),
    ];
    prop::collection::vec(step, 1..25)
}

/// The real inbox with every batch in one transaction and no dead letters
/// (a schedule may fail one message many times).
const REAL: RealInbox = RealInbox {
    batch_size: usize::MAX,
    max_attempts: u32::MAX,
    path: Path::SetBased,
};

/// Plays `schedule` through `inbox` and checks the model after every step,
/// and the oracle too after the final redelivery of everything.
fn check(inbox: &dyn InboxUnderTest<ThisProject>, schedule: &[Step]) -> Result<(), TestCaseError> {
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(inbox, &[&debit, &notify]);
    let messages = payments(MESSAGES);
    let handler = |consumer| -> Arc<AnyHandler> {
        match consumer {
            Consumer::Debit => debit.handler(),
            Consumer::Notify => notify.handler(),
        }
    };
    let mut applied: BTreeSet<(Consumer, usize)> = BTreeSet::new();
    let mut worker = inbox.open(&fixture);
    let drain = Step::Batch(
        [Consumer::Debit, Consumer::Notify]
            .into_iter()
            .flat_map(|consumer| (0..MESSAGES).map(move |n| (consumer, n, false)))
            .collect(),
    );
    let steps = schedule.len() + 1;
    for (number, step) in schedule.iter().chain([&drain]).enumerate() {
        match step {
            Step::Restart => worker = inbox.open(&fixture),
            Step::Batch(deliveries) => {
                let handlers: Vec<Arc<AnyHandler>> = deliveries
                    .iter()
                    .map(|&(consumer, _, fails)| match fails {
                        true => Arc::new(AlwaysFail(handler(consumer))) as Arc<AnyHandler>,
                        false => handler(consumer),
                    })
                    .collect();
                let batch: Vec<_> = deliveries
                    .iter()
                    .zip(&handlers)
                    .map(|(&(_, n, _), handler)| Delivery::new(handler.as_ref(), &messages[n]))
                    .collect();
                if let Err(error) = worker.deliver_batch(&batch) {
                    return Err(TestCaseError::fail(format!(
                        "storage error at step {number}: {error}"
                    )));
                }
                applied.extend(deliveries.iter().filter(|d| !d.2).map(|&(c, n, _)| (c, n)));
            }
        }
        let done = |consumer: Consumer| -> Vec<Message> {
            applied
                .iter()
                .filter(|(c, _)| *c == consumer)
                .map(|&(_, n)| messages[n].clone())
                .collect()
        };
        let last = number + 1 == steps;
        let (debit_done, notify_done) = (done(Consumer::Debit), done(Consumer::Notify));
        let problems = if last {
            let mut problems = Expected::of(&debit, &debit_done)
                .map_err(fail)?
                .problems(&state_of(&fixture, &debit), &BTreeSet::new());
            problems.extend(
                Expected::of(&notify, &notify_done)
                    .map_err(fail)?
                    .problems(&state_of(&fixture, &notify), &BTreeSet::new()),
            );
            problems
        } else {
            let mut problems = Vec::new();
            if state_of(&fixture, &debit) != debit.model(&debit_done).state {
                problems.push("debit's state differs from its model".to_owned());
            }
            if state_of(&fixture, &notify) != notify.model(&notify_done).state {
                problems.push("notify's state differs from its model".to_owned());
            }
            problems
        };
        prop_assert!(
            problems.is_empty(),
            "after step {}: {}",
            number,
            problems.join("; ")
        );
        prop_assert_eq!(
            inbox_rows(&fixture, "debit"),
            debit_done.len(),
            "after step {}, debit inbox rows",
            number
        );
        prop_assert_eq!(
            inbox_rows(&fixture, "notify"),
            notify_done.len(),
            "after step {}, notify inbox rows",
            number
        );
    }
    Ok(())
}

fn fail(violation: crate::support::harness::Violation) -> TestCaseError {
    TestCaseError::fail(violation.to_string())
}

proptest! {
    // Config::default() reads PROPTEST_CASES (default 256).
    #![proptest_config(Config::default())]

    #[test]
    fn generated_schedules_end_in_the_once_only_state(schedule in schedules()) {
        check(&REAL, &schedule)?;
        check(&REAL.falling_back(), &schedule)?;
    }
}

#[test]
fn generated_schedules_catch_the_broken_implementations() {
    let keyed_by_message_id = keyed_by_message_id();
    let broken: [&dyn InboxUnderTest<ThisProject>; 4] =
        [&NoInbox, &RecordFirst, &keyed_by_message_id, &MintedId];
    for inbox in broken {
        let mut runner = TestRunner::new(Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        });
        match runner.run(&schedules(), |schedule| check(inbox, &schedule)) {
            Err(TestError::Fail(reason, minimal)) => {
                println!(
                    "{} caught; minimal schedule {minimal:?}: {reason}",
                    inbox.name()
                )
            }
            other => panic!("{} was not caught: {other:?}", inbox.name()),
        }
    }
}
