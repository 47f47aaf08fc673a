//! A second process for the scenarios that need one: this test binary run
//! again, for the one test [`SECOND_PROCESS_TEST`], with its assignment in
//! the environment, and what passes between the two (messages as lines,
//! outcome counts as JSON). What it does there is the scenario's (see
//! `serve`).

use std::process::Command;

use inbox_kit_runtime::envelope::{Wire, parse_line, to_line};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use crate::harness::{AnyHandlerOf, InboxUnderTest, Project};

/// The test that plays the second process. Every test binary that plays
/// the restart or rules-across-messages scenario declares it, calling
/// `serve_second_process`.
pub const SECOND_PROCESS_TEST: &str = "restart::second_process";

/// Tells the second process what to do: set only for it.
pub(super) const ASSIGNMENT: &str = "INBOX_HARNESS_SECOND_PROCESS";

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
