//! **Run twice**: one worker delivers every message, then all of them
//! again.

use crate::harness::deliver_all;
use crate::harness::{
    InboxUnderTest, Play, PlayOf, Subject, Violation, facts, fixture_for, hangs, observe,
};

pub fn play_run_twice<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "run twice via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = facts(subject, "m-", count);
    let mut worker = inbox.open(&fixture);
    let mut outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    outcomes += deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    Play {
        scenario: format!("run twice via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: 2 * count as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

pub fn run_twice<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    play_run_twice(subject, inbox, count).judge(subject)
}
