//! A second process for the scenarios that need one: this test binary run
//! again, for the one test [`SECOND_PROCESS_TEST`], with its assignment in
//! the environment. What it does is the scenario's: the restart's second
//! round, or its share of the rules-across-messages rounds.

use std::process::Command;

use inbox_kit_runtime::envelope::{Wire, parse_line, to_line};
use inbox_kit_runtime::handler::pick;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use crate::harness::{AnyHandlerOf, Fixture, InboxUnderTest, Project, hangs};

/// The test that plays the second process. Every test binary that plays
/// the restart or rules-across-messages scenario declares it, calling
/// [`serve_second_process`].
pub const SECOND_PROCESS_TEST: &str = "restart::second_process";

/// Tells the second process what to do: set only for it.
const ASSIGNMENT: &str = "INBOX_HARNESS_SECOND_PROCESS";

/// The second process, started with `assignment` (a JSON object whose
/// `kind` says which scenario it serves). Pipe what the scenario needs.
pub fn second_process(assignment: &serde_json::Value) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("this test binary"));
    command
        .args(["--exact", SECOND_PROCESS_TEST, "--ignored", "--nocapture"])
        .env(ASSIGNMENT, assignment.to_string());
    command
}

/// What the second process was given, parsed.
pub struct Assignment<P: Project> {
    pub value: serde_json::Value,
    pub inbox: Box<dyn InboxUnderTest<P>>,
    pub handler: std::sync::Arc<AnyHandlerOf<P>>,
    pub fixture: P::Fixture,
}

impl<P: Project> Assignment<P> {
    /// A text field of the assignment.
    pub fn text(&self, name: &str) -> String {
        self.value[name]
            .as_str()
            .unwrap_or_else(|| panic!("assignment field {name}"))
            .to_owned()
    }
}

/// Plays the second process's part when this process is one (its
/// assignment is in the environment); does nothing otherwise.
/// `inbox_named` finds the inbox under test by its name.
pub fn serve_second_process<P: Project>(
    inbox_named: impl Fn(&str) -> Option<Box<dyn InboxUnderTest<P>>>,
) {
    let Ok(assignment) = std::env::var(ASSIGNMENT) else {
        println!("only a scenario's second process does something here");
        return;
    };
    let value: serde_json::Value = serde_json::from_str(&assignment).expect("assignment");
    let field = |name: &str| value[name].as_str().expect("assignment field").to_owned();
    let inbox = inbox_named(&field("inbox"))
        .unwrap_or_else(|| panic!("no inbox under test named {:?}", field("inbox")));
    let consumer = field("consumer");
    // `pick` checks every consumer first: two sharing a name would
    // otherwise hand this process the wrong one, and its failure would
    // blame the scenario instead of the name.
    let handlers = P::handlers();
    let names: Vec<&str> = handlers.iter().map(|handler| handler.consumer()).collect();
    let at = pick(std::slice::from_ref(&consumer), &names)
        .unwrap_or_else(|error| panic!("the second process cannot find its consumer: {error}"))[0];
    let handler = handlers[at].clone();
    let kind = field("kind");
    let _scenario = hangs::scenario(format!(
        "the second process of `{kind}` via {}, for `{consumer}`",
        inbox.name()
    ));
    let assignment = Assignment {
        fixture: P::Fixture::attach(&field("fixture")),
        inbox,
        handler,
        value,
    };
    match kind.as_str() {
        "restart" => super::restart::second_round(&assignment),
        "serial" => super::serial::second_process_rounds(&assignment),
        other => panic!("no scenario's second process is {other:?}"),
    }
}

/// Messages as the lines of `run`'s input, to hand to another process.
pub fn to_lines<E: Wire>(messages: &[Message<E>]) -> Vec<String> {
    messages.iter().map(to_line).collect()
}

/// The messages written by [`to_lines`].
pub fn from_lines<'a, E: Wire>(lines: impl IntoIterator<Item = &'a str>) -> Vec<Message<E>> {
    lines
        .into_iter()
        .map(|line| parse_line(line.as_bytes()).expect("a message written by the first process"))
        .collect()
}

/// Outcome counts as JSON, between processes.
pub fn summary_to_json(outcomes: &Summary) -> serde_json::Value {
    serde_json::json!({
        "applied": outcomes.applied,
        "duplicate": outcomes.duplicate,
        "failed": outcomes.failed,
        "dead_lettered": outcomes.dead_lettered,
        "refused": outcomes.refused,
    })
}

/// The counts [`summary_to_json`] wrote.
pub fn summary_from_json(counts: &serde_json::Value) -> Summary {
    let count = |name: &str| counts[name].as_u64().expect("a count");
    Summary {
        applied: count("applied"),
        duplicate: count("duplicate"),
        failed: count("failed"),
        dead_lettered: count("dead_lettered"),
        refused: count("refused"),
        rejected: 0,
    }
}
