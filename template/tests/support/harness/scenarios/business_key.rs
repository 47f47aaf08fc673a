//! **Business key**: the handler's own tables are the second line of
//! defence behind the inbox, and their unique key must sit at exactly the
//! right granularity.
//!
//! Every message is first delivered through the inbox: the state must be
//! the model's, so a key too coarse (one that refuses a legitimate row of a
//! fan-out: a second channel, a second line item) is caught. Then each
//! message is delivered again *past* the inbox, straight through the
//! handler, resent with different content under the same id (see
//! [`Subject::resend`]): the state must not move, so a missing key, or one
//! too fine to see that it is the same message, is caught.

use {{crate_name}}::pipeline::Summary;

use super::deliver_all;
use crate::support::harness::judge::observe;
use crate::support::harness::{Expected, InboxUnderTest, Play, Subject, Violation, fixture_for};
use crate::support::raw::apply_alone;

/// The step observed after the deliveries through the inbox.
pub const THROUGH_THE_INBOX: &str = "after the deliveries through the inbox";

pub fn play_business_key<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Play<S::State> {
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = subject.messages(count);
    let outcomes = {
        let mut worker = inbox.open(&fixture);
        deliver_all(worker.as_mut(), handler.as_ref(), &messages)
    };
    let through_the_inbox = observe(&fixture, subject, outcomes);
    let mut raw = fixture.raw();
    for message in &messages {
        // Refused, normally: the handler's key catches the repeat.
        let _ = apply_alone(raw.as_mut(), handler.as_ref(), &subject.resend(message));
    }
    Play {
        scenario: format!("business key via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: count as u64,
        steps: vec![(THROUGH_THE_INBOX.to_owned(), through_the_inbox)],
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

pub fn business_key<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Result<Play<S::State>, Violation> {
    let play = play_business_key(subject, inbox, count);
    let expected = Expected::of(subject, &play.messages)?;
    let first = play.step(THROUGH_THE_INBOX);
    let problems = expected.problems(&first.state);
    if !problems.is_empty() || first.outcomes != applied(count) {
        return Err(play.violation(&format!(
            "{THROUGH_THE_INBOX}: outcomes {}; {} (does a unique key refuse a legitimate row?)",
            first.outcomes,
            problems.join("; ")
        )));
    }
    let problems = expected.problems(&play.observed.state);
    if !problems.is_empty() {
        return Err(play.violation(&format!(
            "a repeat of each message past the inbox changed the state: {} (the handler's own unique key is missing, or too fine to see the repeat)",
            problems.join("; ")
        )));
    }
    play.judge_against(&expected)
}

fn applied(count: usize) -> Summary {
    Summary {
        applied: count as u64,
        ..Summary::default()
    }
}
