//! **Both consumers**: the same messages (same ids) go to two consumers,
//! twice each, both consumers' deliveries of a message side by side in
//! one batch (as the pipeline makes them). Each consumer must apply every
//! message once: the inbox key is (consumer, message id), not the message
//! id alone, in a batch as much as across batches.

use crate::harness::deliver_mixed;
use crate::harness::{
    InboxUnderTest, Play, PlayOf, Subject, Violation, facts, fixture_for, hangs, observe,
};

/// A play for each of the two consumers.
pub type BothPlays<A, B> = (PlayOf<A>, PlayOf<B>);

/// One play per consumer. Both see `first`'s messages.
pub fn play_both_consumers<A: Subject, B: Subject<Project = A::Project>>(
    first: &A,
    second: &B,
    inbox: &dyn InboxUnderTest<A::Project>,
    count: usize,
) -> BothPlays<A, B> {
    let _scenario = hangs::scenario(format!(
        "both consumers via {}, for `{}` and `{}`",
        inbox.name(),
        first.handler().consumer(),
        second.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[first, second]);
    let messages = facts(first, "m-", count);
    let (handler_a, handler_b) = (first.handler(), second.handler());
    let mut worker = inbox.open(&fixture);
    let side_by_side: Vec<_> = messages
        .iter()
        .flat_map(|message| [(handler_a.as_ref(), message), (handler_b.as_ref(), message)])
        .collect();
    let [mut outcomes_a, mut outcomes_b] = deliver_mixed(worker.as_mut(), &side_by_side);
    let [again_a, again_b] = deliver_mixed(worker.as_mut(), &side_by_side);
    outcomes_a += again_a;
    outcomes_b += again_b;
    let scenario = format!("both consumers via {}", inbox.name());
    let deliveries = 2 * count as u64;
    let play_a = Play {
        scenario: scenario.clone(),
        consumer: handler_a.consumer().to_owned(),
        messages: messages.clone(),
        deliveries,
        steps: Vec::new(),
        observed: observe(&fixture, first, outcomes_a),
    };
    let play_b = Play {
        scenario,
        consumer: handler_b.consumer().to_owned(),
        messages,
        deliveries,
        steps: Vec::new(),
        observed: observe(&fixture, second, outcomes_b),
    };
    (play_a, play_b)
}

/// Judged: each consumer's play must pass on its own.
pub fn both_consumers<A: Subject, B: Subject<Project = A::Project>>(
    first: &A,
    second: &B,
    inbox: &dyn InboxUnderTest<A::Project>,
    count: usize,
) -> Result<BothPlays<A, B>, Violation> {
    let (play_a, play_b) = play_both_consumers(first, second, inbox, count);
    Ok((play_a.judge(first)?, play_b.judge(second)?))
}
