//! **Business key**: the handler's own tables are the second line of
//! defence behind the inbox, and their unique key must sit at exactly the
//! right granularity.
//!
//! Every fact is first delivered through the inbox: the state must be the
//! model's, so a key too coarse (one that refuses a legitimate row of a
//! fan-out: a second channel, a second line item) is caught. Then:
//!
//! * each message is resent with other content under its id, *past* the
//!   inbox (straight through the handler, as if its inbox row had been
//!   purged too early, see [`Subject::resend`]): the state must not move,
//!   so a missing key, or one too fine to see that it is the same message,
//!   is caught;
//! * each fact is repeated under a new message id, *through* the inbox,
//!   which cannot see it (see [`Subject::repeat`]): no repeat may apply, so
//!   a handler keyed on the message id where its business id lives in the
//!   payload (a refund id) is caught.

use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::pipeline::Summary;

use crate::harness::apply_alone;
use crate::harness::deliver_all;
use crate::harness::{
    EventOf, Expected, Fixture, InboxUnderTest, Play, PlayOf, Subject, Violation, facts,
    fixture_for, hangs, observe,
};

/// The step observed after the deliveries through the inbox.
pub const THROUGH_THE_INBOX: &str = "after the deliveries through the inbox";

/// The step observed after the resends past the inbox.
pub const AFTER_RESENDS: &str = "after a resend of each message past the inbox";

/// The prefix of the ids repeats are sent under.
const REPEAT: &str = "repeat-of-";

pub fn play_business_key<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "business key via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = facts(subject, "m-", count);
    let mut worker = inbox.open(&fixture);
    let outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    let through_the_inbox = observe(&fixture, subject, outcomes);
    let mut raw = fixture.raw();
    for message in &messages {
        // Refused, normally: the handler's key catches the resend.
        let _ = apply_alone(raw.as_mut(), handler.as_ref(), &subject.resend(message));
    }
    let after_resends = observe(&fixture, subject, outcomes);
    let repeats = repeats(subject, &messages);
    let repeated = deliver_all(worker.as_mut(), handler.as_ref(), &repeats);
    Play {
        scenario: format!("business key via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: count as u64,
        steps: vec![
            (THROUGH_THE_INBOX.to_owned(), through_the_inbox),
            (AFTER_RESENDS.to_owned(), after_resends),
        ],
        observed: observe(&fixture, subject, repeated),
        messages,
    }
}

/// Each fact of `messages` again under a new id, where the subject has a
/// business key of its own.
fn repeats<S: Subject>(subject: &S, messages: &[Message<EventOf<S>>]) -> Vec<Message<EventOf<S>>> {
    messages
        .iter()
        .filter_map(|message| {
            let id = MessageId::new(format!("{REPEAT}{}", message.id)).expect("a valid id");
            subject.repeat(message, id)
        })
        .collect()
}

pub fn business_key<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    let play = play_business_key(subject, inbox, count);
    let expected = Expected::of(subject, &play.messages)?;
    let refused = expected.model.refused.len() as u64;
    let first = play.step(THROUGH_THE_INBOX);
    let problems = expected.problems(&first.state, &first.refused());
    let delivered = Summary {
        applied: count as u64 - refused,
        refused,
        ..Summary::default()
    };
    if !problems.is_empty() || first.outcomes != delivered {
        return Err(play.violation(&format!(
            "{THROUGH_THE_INBOX}: outcomes {}; {} (does a unique key refuse a legitimate row?)",
            first.outcomes,
            problems.join("; ")
        )));
    }
    let resent = play.step(AFTER_RESENDS);
    let problems = expected.problems(&resent.state, &resent.refused());
    if !problems.is_empty() {
        return Err(play.violation(&format!(
            "a resend of each message past the inbox changed the state: {} (the handler's own unique key is missing, or too fine to see the resend)",
            problems.join("; ")
        )));
    }
    let repeated = &play.observed;
    let refused_before: std::collections::BTreeSet<String> = repeated
        .refused()
        .into_iter()
        .filter(|id| !id.starts_with(REPEAT))
        .collect();
    let mut problems = expected.problems(&repeated.state, &refused_before);
    if repeated.outcomes.applied > 0 {
        problems.push(format!("{} repeats applied", repeated.outcomes.applied));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!(
            "the same facts repeated under new message ids went through: {} (the handler's business key, the id in its payload, is missing or too fine)",
            problems.join("; ")
        )));
    }
    Ok(play)
}
