//! **Failure then redelivery**: the first attempt at some messages fails
//! inside the business update, after the handler has done its writes; then
//! every message is delivered again. (Only messages the handler applies are
//! made to fail: one it refuses is refused before any failure is injected.)

use std::collections::HashSet;

use inbox_kit_runtime::message::Message;

use crate::harness::EventOf;
use crate::harness::deliver_all;
use crate::harness::faults::FailFirstAttempt;
use crate::harness::{
    Expected, InboxUnderTest, Play, PlayOf, Subject, Violation, facts, fixture_for, hangs, observe,
};

/// The ids of the messages `failing` picks (by index) that the model says
/// the handler applies.
fn made_to_fail<S: Subject>(
    subject: &S,
    messages: &[Message<EventOf<S>>],
    failing: impl Fn(usize) -> bool,
) -> HashSet<String> {
    let refused = subject.model(messages).refused;
    messages
        .iter()
        .enumerate()
        .filter(|(index, message)| failing(*index) && !refused.contains_key(message.id.as_str()))
        .map(|(_, message)| message.id.as_str().to_owned())
        .collect()
}

/// The name of the step observed after the failed attempts.
pub const AFTER_FAILURE: &str = "after the failures";

/// The first attempt at each message picked by `failing` (by index) fails;
/// the others apply. Then every message is delivered again. The play's
/// step [`AFTER_FAILURE`] is what the first round left; its end is after
/// the redelivery, counted as if the failed attempts had never been made.
pub fn play_redeliver_after_failure<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
    failing: impl Fn(usize) -> bool,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "redelivery after a failure via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let messages = facts(subject, "m-", count);
    let failing_ids = made_to_fail(subject, &messages, &failing);
    let failed = failing_ids.len() as u64;
    let handler = FailFirstAttempt::new(subject.handler(), failing_ids);
    let mut worker = inbox.open(&fixture);

    let first = deliver_all(worker.as_mut(), &handler, &messages);
    let after_failure = observe(&fixture, subject, first);
    let mut both = first;
    both += deliver_all(worker.as_mut(), &handler, &messages);
    both.failed = both.failed.saturating_sub(failed);
    Play {
        scenario: format!("failure then redelivery via {}", inbox.name()),
        consumer: subject.handler().consumer().to_owned(),
        deliveries: 2 * count as u64 - failed,
        steps: vec![(AFTER_FAILURE.to_owned(), after_failure)],
        observed: observe(&fixture, subject, both),
        messages,
    }
}

/// Judged: after the failures, nothing of the failed attempts may remain
/// (not even their inbox rows) while the other messages applied; after the
/// redelivery, every message applied once.
pub fn redeliver_after_failure<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
    failing: impl Fn(usize) -> bool,
) -> Result<PlayOf<S>, Violation> {
    let failing_at: Vec<bool> = (0..count).map(&failing).collect();
    let play = play_redeliver_after_failure(subject, inbox, count, |n| failing_at[n]);
    let failing_ids = made_to_fail(subject, &play.messages, |n| failing_at[n]);
    let healthy: Vec<_> = play
        .messages
        .iter()
        .filter(|message| !failing_ids.contains(message.id.as_str()))
        .cloned()
        .collect();
    let failed = (count - healthy.len()) as u64;
    let after_failure = play.step(AFTER_FAILURE);
    let mut problems =
        Expected::of(subject, &healthy)?.problems(&after_failure.state, &after_failure.refused());
    if after_failure.outcomes.failed != failed {
        problems.push(format!(
            "{} deliveries failed, {failed} were made to fail",
            after_failure.outcomes.failed
        ));
    }
    if after_failure.inbox_rows != healthy.len() {
        problems.push(format!(
            "{} inbox rows, but only {} messages applied or were refused: a failed delivery must leave no row",
            after_failure.inbox_rows,
            healthy.len()
        ));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("{AFTER_FAILURE}: {}", problems.join("; "))));
    }
    play.judge(subject)
}
