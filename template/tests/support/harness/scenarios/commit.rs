//! **Failed commit**: the database refuses the COMMIT itself. Nothing may
//! be reported as applied or duplicate (those outcomes are what a broker
//! consumer acknowledges), nothing may be stored, and the redelivery
//! applies every message once.

use super::deliver_all;
use crate::support::harness::judge::observe;
use crate::support::harness::{
    Expected, InboxUnderTest, Play, Subject, Violation, facts, fixture_for,
};

/// The step observed after the deliveries whose commit failed.
pub const COMMIT_FAILED: &str = "after the failed commit";

/// The first round's commit fails (the fixture's tripwire), the second's
/// succeeds. The play's end counts the second round only.
pub fn play_failed_commit<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Play<S::State> {
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = facts(subject, "m-", count);
    let mut worker = inbox.open(&fixture);
    fixture.fail_commits(true);
    let refused = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    fixture.fail_commits(false);
    let after_failure = observe(&fixture, subject, refused);
    let outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    Play {
        scenario: format!("failed commit via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: count as u64,
        steps: vec![(COMMIT_FAILED.to_owned(), after_failure)],
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

pub fn failed_commit<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Result<Play<S::State>, Violation> {
    let play = play_failed_commit(subject, inbox, count);
    let failed = play.step(COMMIT_FAILED);
    let mut problems = Expected::of(subject, &[])?.problems(&failed.state, &failed.refused());
    let settled = failed.outcomes.applied
        + failed.outcomes.duplicate
        + failed.outcomes.dead_lettered
        + failed.outcomes.refused;
    if settled > 0 {
        problems.push(format!(
            "outcomes {} were reported although nothing was committed (a broker would be told to forget those messages)",
            failed.outcomes
        ));
    }
    if failed.inbox_rows != 0 {
        problems.push(format!("{} inbox rows stored", failed.inbox_rows));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("{COMMIT_FAILED}: {}", problems.join("; "))));
    }
    play.judge(subject)
}
