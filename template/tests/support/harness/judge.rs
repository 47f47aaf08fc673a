//! The judge: what "effectively once" means, checked after a scenario.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Debug;

use {{crate_name}}::handler::Refused;
use {{crate_name}}::inbox::DeadLetter;
use {{crate_name}}::message::Message;
use {{crate_name}}::pipeline::Summary;

use super::{Model, Subject, state_of};
use crate::support::database::Fixture;

/// What a scenario left behind for one consumer.
#[derive(Debug)]
pub struct Observed<State> {
    pub outcomes: Summary,
    pub inbox_rows: usize,
    pub state: State,
    /// The consumer's dead letters, refused ones included.
    pub dead_letters: Vec<DeadLetter>,
    /// Failures counted for the consumer and not yet dead-lettered.
    pub attempts: u64,
}

impl<State> Observed<State> {
    /// The ids of the messages the handler refused (dead-lettered at once).
    pub fn refused(&self) -> BTreeSet<String> {
        self.dead_letters
            .iter()
            .filter(|letter| letter.refused)
            .map(|letter| letter.message_id.clone())
            .collect()
    }
}

/// A scenario's run: what it delivered and what it left behind.
#[derive(Debug)]
pub struct Play<State> {
    /// Which scenario ran, through which inbox.
    pub scenario: String,
    /// The consumer it ran for.
    pub consumer: String,
    /// The distinct messages the scenario delivered (each possibly many
    /// times).
    pub messages: Vec<Message>,
    /// How many deliveries were made in all.
    pub deliveries: u64,
    /// What was seen at named points before the end, in order.
    pub steps: Vec<(String, Observed<State>)>,
    /// What was seen at the end.
    pub observed: Observed<State>,
}

impl<State> Play<State> {
    /// What was seen at the step named `name`.
    pub fn step(&self, name: &str) -> &Observed<State> {
        self.steps
            .iter()
            .find(|(step, _)| step == name)
            .map(|(_, observed)| observed)
            .unwrap_or_else(|| panic!("{} has no step {name:?}", self.scenario))
    }
}

/// A broken promise, with enough detail to see why.
///
/// `Debug` shows the text after `violation: `, so that `.expect(...)` on a
/// judged result reads well, and so that `scripts/red-before-green.sh`
/// counts the panic as a failed assertion (the harness judged the state),
/// not as a set-up that went wrong.
pub struct Violation(pub String);

impl std::fmt::Debug for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "violation: {}", self.0)
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a subject must end in after some distinct messages were each
/// applied once, by two independent routes.
#[derive(Debug)]
pub struct Expected<State> {
    /// From the subject's model (no database, no handler).
    pub model: Model<State>,
    /// From applying each message once, straight through the handler, to
    /// a fresh database (no inbox).
    pub once_only: Model<State>,
}

impl<State: PartialEq + std::fmt::Debug> Expected<State> {
    /// Both expectations for `applied` (repeats of an id are ignored), in
    /// this order.
    pub fn of<S: Subject<State = State>>(
        subject: &S,
        applied: &[Message],
    ) -> Result<Self, Violation> {
        let distinct = distinct(applied);
        Ok(Self {
            model: subject.model(&distinct),
            once_only: once_only(subject, &distinct)?,
        })
    }

    /// The ids the model refuses.
    pub fn refused(&self) -> BTreeSet<String> {
        self.model.refused.keys().cloned().collect()
    }

    /// What is wrong with `state` and the `refused` ids, if anything.
    pub fn problems(&self, state: &State, refused: &BTreeSet<String>) -> Vec<String> {
        let mut problems = Vec::new();
        for (route, expected) in [
            ("the model", &self.model),
            ("applying each message once", &self.once_only),
        ] {
            if *state != expected.state {
                problems.push(state_against(state, route, &expected.state));
            }
            let must_refuse: BTreeSet<String> = expected.refused.keys().cloned().collect();
            if *refused != must_refuse {
                problems.push(format!(
                    "the handler refused {refused:?}, {route} refuses {:?}",
                    expected.refused
                ));
            }
        }
        problems
    }
}

/// `state` against what `route` gives, for a violation: both in full when
/// they are short, otherwise a diff of their pretty forms with a little
/// context (a state of a thousand rows that differs in two shows those
/// two).
pub fn state_against<T: Debug>(state: &T, route: &str, expected: &T) -> String {
    const SHORT: usize = 600;
    const MOST_LINES: usize = 60;
    let (ours, theirs) = (format!("{state:?}"), format!("{expected:?}"));
    if ours.len() + theirs.len() <= SHORT {
        return format!("state is {ours}, {route} gives {theirs}");
    }
    let (ours, theirs) = (format!("{state:#?}\n"), format!("{expected:#?}\n"));
    let diff = similar::TextDiff::from_lines(&ours, &theirs)
        .unified_diff()
        .context_radius(2)
        .header("the state", route)
        .to_string();
    let lines: Vec<&str> = diff.lines().collect();
    let shown = lines.len().min(MOST_LINES);
    let more = if lines.len() > shown {
        format!("\n... and {} more lines of the diff", lines.len() - shown)
    } else {
        String::new()
    };
    format!(
        "state differs from what {route} gives:\n{}{more}",
        lines[..shown].join("\n")
    )
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

/// The messages with repeated ids left out, in first-seen order.
pub fn distinct(messages: &[Message]) -> Vec<Message> {
    let mut seen = HashSet::new();
    messages
        .iter()
        .filter(|message| seen.insert(message.id.clone()))
        .cloned()
        .collect()
}

impl<State: PartialEq + std::fmt::Debug> Play<State> {
    /// Judges the run: state and refusals equal to the model and to
    /// once-only, one inbox row per distinct message, no failures, each
    /// message applied or refused once and every other delivery a
    /// duplicate.
    pub fn judge<S: Subject<State = State>>(self, subject: &S) -> Result<Self, Violation> {
        let expected = Expected::of(subject, &self.messages)?;
        self.judge_against(&expected)
    }

    /// Like [`Play::judge`], against expectations computed once for several
    /// plays of the same messages.
    pub fn judge_against(self, expected: &Expected<State>) -> Result<Self, Violation> {
        let distinct = distinct(&self.messages).len() as u64;
        let refused = expected.model.refused.len() as u64;
        let expected_outcomes = Summary {
            applied: distinct - refused,
            refused,
            duplicate: self.deliveries - distinct,
            ..Summary::default()
        };
        let observed = &self.observed;
        let mut problems = expected.problems(&observed.state, &observed.refused());
        if observed.inbox_rows as u64 != distinct {
            problems.push(format!(
                "inbox holds {} rows for {distinct} distinct messages",
                observed.inbox_rows
            ));
        }
        if observed.outcomes != expected_outcomes {
            problems.push(format!(
                "outcomes {}, expected {expected_outcomes}",
                observed.outcomes
            ));
        }
        if problems.is_empty() {
            return Ok(self);
        }
        Err(self.violation(&problems.join("; ")))
    }

    /// A violation of this play, saying `what`.
    pub fn violation(&self, what: &str) -> Violation {
        Violation(format!("{} [{}]: {what}", self.scenario, self.consumer))
    }
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
