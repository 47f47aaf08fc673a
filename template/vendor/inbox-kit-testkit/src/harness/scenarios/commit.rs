//! **Failed commit**: the database refuses the COMMIT itself. Nothing may
//! be reported as applied or duplicate (those outcomes are what a broker
//! consumer acknowledges), nothing may be stored, and the redelivery
//! applies every message once.

use crate::harness::{
    Expected, InboxUnderTest, PlayOf, Subject, Violation, facts, fixture_for, hangs,
};
use crate::harness::{Fault, Tripwires, play_through_fault};

/// The step observed after the deliveries whose commit failed.
pub const COMMIT_FAILED: &str = "after the failed commit";

/// The first round's commit fails (the fixture's tripwire), the second's
/// succeeds. The play's end counts the second round only.
pub fn play_failed_commit<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "failed commit via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let mut worker = inbox.open(&fixture);
    fixture.fail_commits(true);
    let fault = Fault::<S::Project> {
        scenario: format!("failed commit via {}", inbox.name()),
        step: COMMIT_FAILED,
        rounds: 1,
        handler: handler.as_ref(),
        messages: facts(subject, "m-", count),
    };
    play_through_fault(subject, &fixture, worker.as_mut(), fault, || {
        fixture.fail_commits(false)
    })
}

pub fn failed_commit<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
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
