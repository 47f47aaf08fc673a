//! **A message its handler cannot apply, among others**: one batch of new
//! facts, one of which the handler must fail on by its own logic (a
//! payment from an account never opened), not by an injected error. It
//! must fail alone, counted, with no inbox row, while every other fact
//! applies once. A set-based path that drops what it cannot apply and
//! reports the whole run applied shows up here: the failing message
//! counted as applied, with an inbox row and no effect.

use crate::harness::{
    Expected, InboxUnderTest, Play, PlayOf, Subject, Violation, deliver_all, facts, fixture_for,
    hangs, observe,
};
use inbox_kit_runtime::message::MessageId;
use inbox_kit_runtime::pipeline::Summary;

/// Facts in the batch, and where among them the one that cannot apply is.
const FACTS: usize = 10;
const CANNOT_APPLY_AT: usize = 3;

/// Judged; `Ok(None)` for a subject with no fact it cannot apply.
pub fn cannot_apply<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
) -> Result<Option<PlayOf<S>>, Violation> {
    let _scenario = hangs::scenario(format!(
        "cannot apply via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let id = MessageId::new("cannot-apply").expect("a valid id");
    let Some(failing) = subject.cannot_apply(id) else {
        return Ok(None);
    };
    let applied = facts(subject, "m-", FACTS);
    let mut messages = applied.clone();
    messages.insert(CANNOT_APPLY_AT, failing);
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let mut worker = inbox.open(&fixture);
    let outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    let play = Play {
        scenario: format!(
            "a message it cannot apply among others via {}",
            inbox.name()
        ),
        consumer: handler.consumer().to_owned(),
        deliveries: messages.len() as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, outcomes),
        messages,
    };
    let observed = &play.observed;
    let mut problems =
        Expected::of(subject, &applied)?.problems(&observed.state, &observed.refused());
    let expected = Summary {
        applied: FACTS as u64,
        failed: 1,
        ..Summary::default()
    };
    if observed.outcomes != expected {
        problems.push(format!(
            "outcomes {}, expected {expected}",
            observed.outcomes
        ));
    }
    if observed.inbox_rows != FACTS {
        problems.push(format!(
            "{} inbox rows for {FACTS} messages applied",
            observed.inbox_rows
        ));
    }
    if observed.attempts != 1 {
        problems.push(format!(
            "{} failures counted, expected the one",
            observed.attempts
        ));
    }
    if problems.is_empty() {
        Ok(Some(play))
    } else {
        Err(play.violation(&problems.join("; ")))
    }
}
