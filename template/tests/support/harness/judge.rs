//! The judge, on this project's database: what "effectively once" means
//! is the test kit's (`inbox_kit_testkit::harness::judge`: the model and
//! once-only routes held against what a scenario left behind); this module
//! computes the once-only route on a fresh database, and reads what a
//! scenario left behind.

use std::collections::BTreeMap;

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::Refused;
use {{crate_name}}::message::Message;
use {{crate_name}}::pipeline::Summary;

pub use inbox_kit_testkit::harness::judge::{
    Expected, Model, Observed, Violation, distinct, state_against,
};

use super::{Subject, state_of};
use crate::support::database::Fixture;

/// A scenario's run on this project's events.
pub type Play<State> = inbox_kit_testkit::harness::judge::Play<Event, State>;

/// [`Expected`] for a subject, on this project's database.
pub trait ExpectedOf<State>: Sized {
    /// Both expectations for `applied` (repeats of an id are ignored), in
    /// this order.
    fn of<S: Subject<State = State>>(subject: &S, applied: &[Message]) -> Result<Self, Violation>;
}

impl<State: PartialEq + std::fmt::Debug> ExpectedOf<State> for Expected<State> {
    fn of<S: Subject<State = State>>(subject: &S, applied: &[Message]) -> Result<Self, Violation> {
        let distinct = distinct(applied);
        Ok(Self {
            model: subject.model(&distinct),
            once_only: once_only(subject, &distinct)?,
        })
    }
}

/// Judging a [`Play`] against its subject.
pub trait Judge<State>: Sized {
    /// Judges the run against both expectations for its messages
    /// ([`Play::judge_against`]).
    fn judge<S: Subject<State = State>>(self, subject: &S) -> Result<Self, Violation>;
}

impl<State: PartialEq + std::fmt::Debug> Judge<State> for Play<State> {
    fn judge<S: Subject<State = State>>(self, subject: &S) -> Result<Self, Violation> {
        let expected = Expected::of(subject, &self.messages)?;
        self.judge_against(&expected)
    }
}

/// Applies `messages` once each, in order, straight through the handler to
/// an empty database, each under a savepoint: a message the handler
/// refuses may have written before refusing, and that is rolled back.
fn once_only<S: Subject>(subject: &S, messages: &[Message]) -> Result<Model<S::State>, Violation> {
    let handler = subject.handler();
    Fixture::scratch(|scratch| {
        scratch.read(|tables| subject.seed(tables)).expect("seed");
        let mut refused = BTreeMap::new();
        for message in messages {
            let Err(error) = scratch.attempt(|tables| handler.apply(tables, message)) else {
                continue;
            };
            match error.downcast::<Refused>() {
                Ok(refusal) => {
                    refused.insert(message.id.to_string(), refusal.0);
                }
                Err(error) => {
                    return Err(Violation(format!(
                        "`{}` fails even when each message is applied once to a fresh database: {error}",
                        handler.consumer()
                    )));
                }
            }
        }
        let state = scratch
            .read(|tables| subject.state(tables))
            .expect("read the state");
        Ok(Model { state, refused })
    })
}

/// Reads what `fixture` holds for `subject` after `outcomes`.
pub fn observe<S: Subject>(
    fixture: &Fixture,
    subject: &S,
    outcomes: Summary,
) -> Observed<S::State> {
    let consumer = subject.handler().consumer();
    Observed {
        outcomes,
        inbox_rows: super::inbox_rows(fixture, consumer),
        state: state_of(fixture, subject),
        dead_letters: fixture
            .dead_letters()
            .into_iter()
            .filter(|letter| letter.consumer == consumer)
            .collect(),
        attempts: fixture.failures_counted(consumer),
    }
}
