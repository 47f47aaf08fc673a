//! **Restart**: deliver everything, then deliver everything again from a
//! *new process*. All of the second round must be duplicates.
//!
//! The second round really runs in another process (this test binary run
//! again, for the one test [`SECOND_PROCESS_TEST`]), so an inbox that
//! remembers processed ids in memory instead of in the database is caught:
//! reopening a connection in the same process would not notice.

use std::path::Path;
use std::process::Command;

use {{crate_name}}::envelope::{parse_line, to_line};
use {{crate_name}}::handlers;
use {{crate_name}}::message::Message;
use {{crate_name}}::pipeline::Summary;

use super::deliver_all;
use crate::support::database::Fixture;
use crate::support::harness::judge::observe;
use crate::support::harness::{InboxUnderTest, Play, Subject, Violation, facts, fixture_for};

/// The test that plays the second process. Every test binary that plays
/// the restart scenario declares it, calling [`serve_second_process`].
pub const SECOND_PROCESS_TEST: &str = "restart::second_process";

/// Tells the second process what to do: set only for it.
const ASSIGNMENT: &str = "INBOX_HARNESS_SECOND_PROCESS";

/// The step observed after the first process's round.
pub const FIRST_PROCESS: &str = "after the first process";

pub fn play_restart<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Play<S::State> {
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = facts(subject, "m-", count);
    let first = {
        let mut worker = inbox.open(&fixture);
        deliver_all(worker.as_mut(), handler.as_ref(), &messages)
    };
    let after_first = observe(&fixture, subject, first);
    let mut outcomes = first;
    outcomes += second_process(&fixture, inbox, handler.consumer(), &messages);
    Play {
        scenario: format!("restart in a new process via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: 2 * count as u64,
        steps: vec![(FIRST_PROCESS.to_owned(), after_first)],
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

pub fn restart<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    count: usize,
) -> Result<Play<S::State>, Violation> {
    play_restart(subject, inbox, count).judge(subject)
}

/// Runs the second round in a new process and returns its outcomes.
fn second_process(
    fixture: &Fixture,
    inbox: &dyn InboxUnderTest,
    consumer: &str,
    messages: &[Message],
) -> Summary {
    let folder = tempfile::tempdir().expect("temporary folder");
    let (input, output) = (
        folder.path().join("in.jsonl"),
        folder.path().join("out.json"),
    );
    let lines: Vec<String> = messages.iter().map(to_line).collect();
    std::fs::write(&input, lines.join("\n")).expect("write the messages");
    let assignment = serde_json::json!({
        "fixture": fixture.location(),
        "inbox": inbox.name(),
        "consumer": consumer,
        "input": input,
        "output": output,
    });
    let run = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", SECOND_PROCESS_TEST, "--ignored", "--nocapture"])
        .env(ASSIGNMENT, assignment.to_string())
        .output()
        .expect("start the second process");
    let report = std::fs::read_to_string(&output).unwrap_or_else(|_| {
        panic!(
            "the second process reported nothing (does this test binary declare `{SECOND_PROCESS_TEST}`?):\n{}\n{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        )
    });
    let counts: serde_json::Value =
        serde_json::from_str(&report).expect("the second process's report");
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

/// Plays the second round when this process is the restart scenario's
/// second process (its assignment is in the environment); does nothing
/// otherwise. `inbox_named` finds the inbox under test by its name.
pub fn serve_second_process(inbox_named: impl Fn(&str) -> Option<Box<dyn InboxUnderTest>>) {
    let Ok(assignment) = std::env::var(ASSIGNMENT) else {
        println!("only the restart scenario's second process does something here");
        return;
    };
    let assignment: serde_json::Value = serde_json::from_str(&assignment).expect("assignment");
    let text = |name: &str| {
        assignment[name]
            .as_str()
            .expect("assignment field")
            .to_owned()
    };
    let inbox = inbox_named(&text("inbox"))
        .unwrap_or_else(|| panic!("no inbox under test named {:?}", text("inbox")));
    let consumer = text("consumer");
    let handler = handlers::all()
        .into_iter()
        .find(|handler| handler.consumer() == consumer)
        .unwrap_or_else(|| {
            panic!("the restart scenario needs a registered consumer, not {consumer:?}")
        });
    let messages: Vec<Message> = std::fs::read_to_string(text("input"))
        .expect("the messages")
        .lines()
        .map(|line| parse_line(line.as_bytes()).expect("a message written by the first process"))
        .collect();
    let fixture = Fixture::attach(&text("fixture"));
    let mut worker = inbox.open(&fixture);
    let outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    let report = serde_json::json!({
        "applied": outcomes.applied,
        "duplicate": outcomes.duplicate,
        "failed": outcomes.failed,
        "dead_lettered": outcomes.dead_lettered,
        "refused": outcomes.refused,
    });
    std::fs::write(Path::new(&text("output")), report.to_string()).expect("write the report");
}
