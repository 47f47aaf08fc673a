//! **Dead letters and redrive**: a message whose handler always fails is
//! counted (the count read back after each failure is that failure's
//! number), then parked as a dead letter at its `max_attempts`-th failure,
//! with its payload and its inbox row, so that its redeliveries are
//! duplicates; the other messages apply meanwhile. A redrive that fails
//! again leaves the dead letter exactly as it was; one with the cause
//! fixed applies the message once and removes the dead letter.

use std::collections::HashSet;

use inbox_kit_runtime::delivery::{DeadLetters, Delivery};
use inbox_kit_runtime::envelope::Wire;
use inbox_kit_runtime::handler::{Registry, Subscriber};
use inbox_kit_runtime::inbox::{Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use crate::harness::EventOf;
use crate::harness::faults::FailFor;
use crate::harness::{
    DeadLettersUnderTest, Expected, Play, PlayOf, RealInbox, Subject, Violation, facts,
    fixture_for, hangs, observe,
};
use crate::harness::{applied_facts, deliver_all};

/// Failures after which the scenario's poison message is dead-lettered.
pub const MAX_ATTEMPTS: u32 = 3;

/// The step observed once the poison message was dead-lettered.
pub const DEAD_LETTERED: &str = "after the poison message was dead-lettered";
/// The step observed after one more delivery of everything.
pub const REDELIVERED: &str = "after a redelivery of everything";
/// The step observed after a redrive that failed again.
pub const FAILED_REDRIVE: &str = "after a redrive that failed again";

pub fn play_dead_letters<S: Subject>(
    subject: &S,
    letters: &dyn DeadLettersUnderTest<S::Project>,
) -> (PlayOf<S>, [Outcome; 2], Vec<u32>) {
    let _scenario = hangs::scenario(format!(
        "dead letters via {}, for `{}`",
        letters.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(&RealInbox::BATCHED, &[subject]);
    let handler = subject.handler();
    let messages = applied_facts(subject, 4);
    let poison = messages[1].clone();
    let failing = FailFor::new(handler.clone(), HashSet::from([poison.id.to_string()]));
    let mut inbox = letters.open(
        &fixture,
        Policy {
            max_attempts: MAX_ATTEMPTS,
        },
    );
    let mut outcomes = Summary::default();
    let mut counted = Vec::new();
    for _ in 0..MAX_ATTEMPTS {
        outcomes += deliver_all(inbox.as_mut(), &failing, &messages);
        counted.push(
            inbox
                .failures(handler.consumer(), poison.id.as_str())
                .unwrap_or(u32::MAX),
        );
    }
    let dead_lettered = observe(&fixture, subject, outcomes);
    let again = deliver_all(inbox.as_mut(), &failing, &messages);
    let redelivered = observe(&fixture, subject, again);
    let still_failing = redrive(inbox.as_mut(), &failing, &poison);
    let failed_redrive = observe(&fixture, subject, Summary::default());
    let fixed = redrive(inbox.as_mut(), handler.as_ref(), &poison);
    let finally = deliver_all(inbox.as_mut(), handler.as_ref(), &messages);
    let play = Play {
        scenario: format!("dead letters and redrive via {}", letters.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: u64::from(MAX_ATTEMPTS + 2) * messages.len() as u64,
        steps: vec![
            (DEAD_LETTERED.to_owned(), dead_lettered),
            (REDELIVERED.to_owned(), redelivered),
            (FAILED_REDRIVE.to_owned(), failed_redrive),
        ],
        observed: observe(&fixture, subject, finally),
        messages,
    };
    (play, [still_failing, fixed], counted)
}

fn redrive<'a, R: Registry>(
    inbox: &mut dyn DeadLetters<R>,
    handler: &'a R::Handler<'a>,
    message: &'a Message<R::Event>,
) -> Outcome {
    let _waiting = hangs::waiting(format!(
        "redriving {} to `{}`",
        message.id,
        handler.consumer()
    ));
    inbox
        .redrive(handler, message)
        .unwrap_or_else(|error| Outcome::Failed(format!("storage error: {error}")))
}

/// Judged: see the module's comment, step by step.
pub fn dead_letters<S: Subject>(
    subject: &S,
    letters: &dyn DeadLettersUnderTest<S::Project>,
) -> Result<PlayOf<S>, Violation>
where
    EventOf<S>: Wire,
{
    let (play, [still_failing, fixed], counted) = play_dead_letters(subject, letters);
    let poison = &play.messages[1];
    let healthy: Vec<Message<EventOf<S>>> = play
        .messages
        .iter()
        .filter(|message| message.id != poison.id)
        .cloned()
        .collect();
    let before_redrive = Expected::of(subject, &healthy)?;
    let fail = |step: &str, problems: Vec<String>| -> Result<(), Violation> {
        if problems.is_empty() {
            return Ok(());
        }
        Err(play.violation(&format!("{step}: {}", problems.join("; "))))
    };

    let parked = play.step(DEAD_LETTERED);
    let mut problems = before_redrive.problems(&parked.state, &parked.refused());
    let rounds = u64::from(MAX_ATTEMPTS);
    let expected = Summary {
        applied: healthy.len() as u64,
        duplicate: (rounds - 1) * healthy.len() as u64,
        failed: rounds - 1,
        dead_lettered: 1,
        ..Summary::default()
    };
    if parked.outcomes != expected {
        problems.push(format!(
            "outcomes {}, expected {expected} (dead-lettered at failure {MAX_ATTEMPTS}, not before, not never)",
            parked.outcomes
        ));
    }
    match parked.dead_letters.as_slice() {
        [letter] => {
            let (event_type, payload) = poison.event.encode();
            let same_message = letter.message_id == poison.id.as_str()
                && letter.event_type == event_type
                && EventOf::<S>::decode(&letter.event_type, &letter.payload).ok()
                    == EventOf::<S>::decode(event_type, &payload).ok();
            if !same_message || letter.refused || letter.attempts != MAX_ATTEMPTS {
                problems.push(format!(
                    "the dead letter {letter:?} is not the poison message {} with {MAX_ATTEMPTS} attempts",
                    poison.id
                ));
            }
        }
        letters => problems.push(format!("dead letters {letters:?}: expected the poison one")),
    }
    if parked.inbox_rows != play.messages.len() {
        problems.push(format!(
            "{} inbox rows: a dead letter keeps its inbox row, so that redeliveries are duplicates",
            parked.inbox_rows
        ));
    }
    // Counted 1, 2, ... after each failure; forgotten (0) once parked.
    let counts: Vec<u32> = (1..MAX_ATTEMPTS).chain([0]).collect();
    if counted != counts {
        problems.push(format!(
            "failures read back after each round: {counted:?}, expected {counts:?}"
        ));
    }
    fail(DEAD_LETTERED, problems)?;

    let redelivered = play.step(REDELIVERED);
    let mut problems = before_redrive.problems(&redelivered.state, &redelivered.refused());
    let all_duplicates = Summary {
        duplicate: play.messages.len() as u64,
        ..Summary::default()
    };
    if redelivered.outcomes != all_duplicates {
        problems.push(format!(
            "outcomes {}: a dead-lettered message is a duplicate when it comes again",
            redelivered.outcomes
        ));
    }
    fail(REDELIVERED, problems)?;

    let failed_again = play.step(FAILED_REDRIVE);
    let mut problems = before_redrive.problems(&failed_again.state, &failed_again.refused());
    if still_failing == Outcome::Applied {
        problems.push("a redrive of a message that still fails reported it applied".into());
    }
    if failed_again.dead_letters != parked.dead_letters {
        problems.push(format!(
            "the dead letter changed: {:?}, was {:?} (a redrive that fails must leave it as it was)",
            failed_again.dead_letters, parked.dead_letters
        ));
    }
    fail(FAILED_REDRIVE, problems)?;

    let end = &play.observed;
    let mut problems = Expected::of(subject, &play.messages)?.problems(&end.state, &end.refused());
    if fixed != Outcome::Applied {
        problems.push(format!("the redrive with the cause fixed gave {fixed:?}"));
    }
    if !end.dead_letters.is_empty() {
        problems.push(format!(
            "dead letters {:?} left after the redrive applied",
            end.dead_letters
        ));
    }
    if end.outcomes != all_duplicates {
        problems.push(format!("after the redrive, outcomes {}", end.outcomes));
    }
    fail("after the redrive", problems)?;
    Ok(play)
}

/// The step observed after the crash loop's one batch.
pub const CRASH_LOOPED: &str = "after deliveries that no attempt ever finished";

/// **A message that kills its consumer**: the source has delivered it more
/// often than attempts allow, and no failure was ever counted (the process
/// died each time, before any outcome). One message delivered exactly
/// `max_attempts` times still runs its handler and applies; one delivered
/// once more is parked as a dead letter, with its inbox row, without
/// running its handler again. Both are duplicates afterwards.
pub fn crash_loop<S: Subject>(
    subject: &S,
    letters: &dyn DeadLettersUnderTest<S::Project>,
) -> Result<PlayOf<S>, Violation> {
    let _scenario = hangs::scenario(format!(
        "crash loop via {}, for `{}`",
        letters.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(&RealInbox::BATCHED, &[subject]);
    let handler = subject.handler();
    let messages = applied_facts(subject, 2);
    let (survivor, deadly) = (&messages[0], &messages[1]);
    let policy = Policy {
        max_attempts: MAX_ATTEMPTS,
    };
    let mut inbox = letters.open(&fixture, policy);
    let batch = [
        Delivery {
            delivered: MAX_ATTEMPTS,
            ..Delivery::new(handler.as_ref(), survivor)
        },
        Delivery {
            delivered: MAX_ATTEMPTS + 1,
            ..Delivery::new(handler.as_ref(), deadly)
        },
    ];
    let mut first = Summary::default();
    let waiting = hangs::waiting("delivering a batch that crashes its worker");
    let delivered = inbox.deliver_batch(&batch);
    drop(waiting);
    match delivered {
        Ok(outcomes) => outcomes.iter().for_each(|o| first.count(o)),
        Err(error) => {
            eprintln!("storage error: {error}");
            first.failed += 2;
        }
    }
    let looped = observe(&fixture, subject, first);
    let again = deliver_all(inbox.as_mut(), handler.as_ref(), &messages);
    let play = Play {
        scenario: format!("a message that kills its consumer via {}", letters.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: u64::from(2 * MAX_ATTEMPTS + 1) + 2,
        steps: vec![(CRASH_LOOPED.to_owned(), looped)],
        observed: observe(&fixture, subject, again),
        messages: messages.clone(),
    };

    let step = play.step(CRASH_LOOPED);
    let mut problems = Expected::of(subject, std::slice::from_ref(survivor))?
        .problems(&step.state, &step.refused());
    let expected = Summary {
        applied: 1,
        dead_lettered: 1,
        ..Summary::default()
    };
    if step.outcomes != expected {
        problems.push(format!(
            "outcomes {}, expected {expected}: delivered {MAX_ATTEMPTS} times, a message still runs; once more, it is parked unrun",
            step.outcomes
        ));
    }
    let parked: Vec<&str> = step
        .dead_letters
        .iter()
        .filter(|letter| !letter.refused)
        .map(|letter| letter.message_id.as_str())
        .collect();
    if parked != [deadly.id.as_str()] {
        problems.push(format!(
            "dead letters {parked:?}, expected only {} (delivered {} times)",
            deadly.id,
            MAX_ATTEMPTS + 1
        ));
    }
    if step.inbox_rows != messages.len() {
        problems.push(format!(
            "{} inbox rows: the applied message and the parked one each keep theirs",
            step.inbox_rows
        ));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("{CRASH_LOOPED}: {}", problems.join("; "))));
    }
    let all_duplicates = Summary {
        duplicate: messages.len() as u64,
        ..Summary::default()
    };
    if play.observed.outcomes != all_duplicates {
        return Err(play.violation(&format!(
            "delivered again, outcomes {}: both were settled",
            play.observed.outcomes
        )));
    }
    Ok(play)
}

/// **A refusal after a failure**: a message its handler refuses, which
/// failed once before for a reason that heals, is dead-lettered when it is
/// refused, marked refused, with both attempts counted and its inbox row
/// (its next delivery is a duplicate). The messages before it in the
/// subject's facts apply meanwhile. A subject that refuses none of its
/// facts has nothing to show here: `Ok(None)`.
pub fn refused_after_a_failure<S: Subject>(
    subject: &S,
    letters: &dyn DeadLettersUnderTest<S::Project>,
) -> Result<Option<PlayOf<S>>, Violation> {
    let _scenario = hangs::scenario(format!(
        "refused after a failure via {}, for `{}`",
        letters.name(),
        subject.handler().consumer()
    ));
    let candidates = facts(subject, "m-", 40);
    let refused = subject.model(&candidates).refused;
    let Some(last) = candidates
        .iter()
        .position(|message| refused.contains_key(message.id.as_str()))
    else {
        return Ok(None);
    };
    let messages = candidates[..=last].to_vec();
    let refusal = messages[last].clone();
    let fixture = fixture_for(&RealInbox::BATCHED, &[subject]);
    let handler = subject.handler();
    let failing = FailFor::before(handler.clone(), HashSet::from([refusal.id.to_string()]));
    let mut inbox = letters.open(
        &fixture,
        Policy {
            max_attempts: MAX_ATTEMPTS,
        },
    );
    let first = deliver_all(inbox.as_mut(), &failing, &messages);
    let failed_once = observe(&fixture, subject, first);
    let second = deliver_all(inbox.as_mut(), handler.as_ref(), &messages);
    let play = Play {
        scenario: format!("a refusal after a failure via {}", letters.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: 2 * messages.len() as u64,
        steps: vec![("after the first, failed, attempt".to_owned(), failed_once)],
        observed: observe(&fixture, subject, second),
        messages: messages.clone(),
    };
    let end = &play.observed;
    let mut problems = Expected::of(subject, &messages)?.problems(&end.state, &end.refused());
    let expected = Summary {
        duplicate: last as u64,
        refused: 1,
        ..Summary::default()
    };
    if end.outcomes != expected {
        problems.push(format!(
            "the second delivery gave {}, expected {expected}",
            end.outcomes
        ));
    }
    match end.dead_letters.as_slice() {
        [letter] if letter.message_id == refusal.id.as_str() && letter.refused && letter.attempts == 2 => {}
        letters => problems.push(format!(
            "dead letters {letters:?}: expected {} refused, with 2 attempts (the failure, then the refusal)",
            refusal.id
        )),
    }
    if end.inbox_rows != messages.len() {
        problems.push(format!(
            "{} inbox rows for {} messages: a refused message keeps its row",
            end.inbox_rows,
            messages.len()
        ));
    }
    if problems.is_empty() {
        return Ok(Some(play));
    }
    Err(play.violation(&problems.join("; ")))
}
