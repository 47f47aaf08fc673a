//! The oracle: what "effectively once" means, checked after a scenario.

use std::collections::HashSet;

use {{crate_name}}::message::Message;
use {{crate_name}}::pipeline::Summary;

use rusqlite::Connection;

use super::Subject;

/// What a scenario left behind for one consumer.
#[derive(Debug)]
pub struct Observed<State> {
    pub outcomes: Summary,
    pub inbox_rows: usize,
    pub state: State,
}

/// A scenario's run before it is judged.
#[derive(Debug)]
pub struct Play<State> {
    /// Which scenario ran, through which inbox.
    pub scenario: String,
    /// The messages the scenario delivered (each possibly many times).
    pub messages: Vec<Message>,
    /// How many deliveries were made in all.
    pub deliveries: u64,
    pub observed: Observed<State>,
}

/// A broken promise, with enough detail to see why.
#[derive(Debug)]
pub struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The state after applying each distinct message exactly once, straight
/// through the handler, in a fresh database. No inbox is involved, and
/// nothing about files or locking matters here, so it runs in memory.
pub fn once_only_state<S: Subject>(
    subject: &S,
    messages: &[Message],
) -> Result<S::State, Violation> {
    let handler = subject.handler();
    let mut db = Connection::open_in_memory().expect("in-memory database");
    db.execute_batch(handler.schema()).expect("handler schema");
    subject.seed(&db);
    let mut seen = HashSet::new();
    for message in messages.iter().filter(|m| seen.insert(m.id.clone())) {
        let tx = db.transaction().expect("begin");
        handler.apply(&tx, message).map_err(|error| {
            Violation(format!(
                "`{}` fails even when each message is applied once to a fresh database: {error}",
                handler.consumer()
            ))
        })?;
        tx.commit().expect("commit");
    }
    Ok(subject.state(&db))
}

impl<State: PartialEq + std::fmt::Debug> Play<State> {
    /// Judges the run: state equal to once-only, one inbox row per distinct
    /// message, no failures, every other delivery a duplicate.
    pub fn judge<S: Subject<State = State>>(
        self,
        subject: &S,
    ) -> Result<Observed<State>, Violation> {
        let distinct = self
            .messages
            .iter()
            .map(|m| &m.id)
            .collect::<HashSet<_>>()
            .len();
        let expected_state = once_only_state(subject, &self.messages)?;
        let expected_outcomes = Summary {
            applied: distinct as u64,
            duplicate: self.deliveries - distinct as u64,
            ..Summary::default()
        };
        let observed = self.observed;
        let mut problems = Vec::new();
        if observed.state != expected_state {
            problems.push(format!(
                "state is {:?}, once-only gives {:?}",
                observed.state, expected_state
            ));
        }
        if observed.inbox_rows != distinct {
            problems.push(format!(
                "inbox holds {} rows for {} distinct messages",
                observed.inbox_rows, distinct
            ));
        }
        if observed.outcomes != expected_outcomes {
            problems.push(format!(
                "outcomes {}, expected {}",
                observed.outcomes, expected_outcomes
            ));
        }
        if problems.is_empty() {
            return Ok(observed);
        }
        Err(Violation(format!(
            "{} [{}]: {}",
            self.scenario,
            subject.handler().consumer(),
            problems.join("; ")
        )))
    }
}
