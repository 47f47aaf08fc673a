//! **A handler's statement that fails inside a delivery**: in the middle
//! of a batch, the handler's write for some messages fails at its own SQL
//! statement (a trigger the fixture arms refuses it: see
//! [`StatementTripwire`]). On PostgreSQL that aborts the whole
//! transaction until it is rolled back to a savepoint; on SQLite the
//! statement alone is undone. Either way the failing deliveries must roll
//! back alone, counted, while their siblings apply, and the redelivery
//! applies the failed ones once.
//!
//! And where the database can do it (SQLite, `RAISE(ROLLBACK)`), a
//! statement that ends the whole transaction: nothing of the batch may be
//! reported applied, the failing delivery's attempt is still counted, and
//! the redelivery applies everything once.

use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use crate::harness::deliver_all;
use crate::harness::{
    EventOf, Expected, InboxUnderTest, Play, PlayOf, Project, Subject, Violation, facts,
    fixture_for, hangs, observe,
};

/// A tripwire on one handler's own statement, which only the project can
/// arm (its triggers name the handler's table): implemented for the
/// project's fixture, for the subject whose write it trips. Each message
/// named makes that subject's write for it fail.
pub trait StatementTripwire<P> {
    /// From now on, the subject's write for each of `message_ids` fails at
    /// its statement, inside the delivery.
    fn fail_statements(&self, message_ids: &[&str]);
    /// From now on, the subject's write for each of `message_ids` ends its
    /// whole transaction; `false` where the database cannot do that.
    fn end_transaction_at(&self, message_ids: &[&str]) -> bool;
    /// The statements no longer fail.
    fn heal_statements(&self);
}

/// The step observed after the batch in which the statements failed.
pub const STATEMENTS_FAILED: &str = "after the batch in which some statements failed";

/// How the chosen statements fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failing {
    /// The statement fails; the transaction goes on (from a savepoint).
    Statement,
    /// The statement ends the whole transaction.
    WholeTransaction,
}

/// Which of the messages fail: the 3rd and the 7th.
fn failing<E>(messages: &[Message<E>]) -> Vec<&str> {
    [2, 6]
        .into_iter()
        .filter_map(|at| messages.get(at))
        .map(|message| message.id.as_str())
        .collect()
}

/// `None` when the database cannot fail a statement that way.
pub fn play_statement_fails<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
    how: Failing,
) -> Option<PlayOf<S>>
where
    <S::Project as Project>::Fixture: StatementTripwire<S::Project>,
{
    let _scenario = hangs::scenario(format!(
        "a statement fails ({how:?}) via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = facts(subject, "m-", count);
    let failing = failing(&messages);
    match how {
        Failing::Statement => fixture.fail_statements(&failing),
        Failing::WholeTransaction => {
            if !fixture.end_transaction_at(&failing) {
                return None;
            }
        }
    }
    let mut worker = inbox.open(&fixture);
    let first = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    let after = observe(&fixture, subject, first);
    fixture.heal_statements();
    let outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    Some(Play {
        scenario: format!("statements failing ({how:?}) via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: count as u64,
        steps: vec![(STATEMENTS_FAILED.to_owned(), after)],
        observed: observe(&fixture, subject, outcomes),
        messages,
    })
}

/// Judged: see the module's comment. `Ok(None)`: the database cannot fail
/// a statement that way.
pub fn statement_fails<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
    how: Failing,
) -> Result<Option<PlayOf<S>>, Violation>
where
    <S::Project as Project>::Fixture: StatementTripwire<S::Project>,
{
    let Some(play) = play_statement_fails(subject, inbox, count, how) else {
        return Ok(None);
    };
    let failing = failing(&play.messages);
    let siblings: Vec<Message<EventOf<S>>> = play
        .messages
        .iter()
        .filter(|message| !failing.contains(&message.id.as_str()))
        .cloned()
        .collect();
    let after = play.step(STATEMENTS_FAILED);
    let (applied, expected_outcomes) = match how {
        Failing::Statement => (
            siblings.clone(),
            Summary {
                applied: siblings.len() as u64,
                failed: failing.len() as u64,
                ..Summary::default()
            },
        ),
        // The whole batch is lost: every delivery of it failed, none may
        // be acknowledged. Only the one that ended it counts an attempt.
        Failing::WholeTransaction => (
            Vec::new(),
            Summary {
                failed: play.messages.len() as u64,
                ..Summary::default()
            },
        ),
    };
    let mut problems = Expected::of(subject, &applied)?.problems(&after.state, &after.refused());
    if after.outcomes != expected_outcomes {
        problems.push(format!(
            "outcomes {}, expected {expected_outcomes}",
            after.outcomes
        ));
    }
    if after.inbox_rows != applied.len() {
        problems.push(format!(
            "{} inbox rows for {} deliveries applied",
            after.inbox_rows,
            applied.len()
        ));
    }
    if after.attempts == 0 {
        problems.push("no failure counted for the statements that failed".into());
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("{STATEMENTS_FAILED}: {}", problems.join("; "))));
    }
    let expected = Expected::of(subject, &play.messages)?;
    let end = &play.observed;
    let mut problems = expected.problems(&end.state, &end.refused());
    let redelivered = Summary {
        applied: (play.messages.len() - applied.len()) as u64,
        duplicate: applied.len() as u64,
        ..Summary::default()
    };
    if end.outcomes != redelivered {
        problems.push(format!(
            "the redelivery gave {}, expected {redelivered}",
            end.outcomes
        ));
    }
    if end.inbox_rows != play.messages.len() {
        problems.push(format!("{} inbox rows in the end", end.inbox_rows));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("after the redelivery: {}", problems.join("; "))));
    }
    Ok(Some(play))
}
