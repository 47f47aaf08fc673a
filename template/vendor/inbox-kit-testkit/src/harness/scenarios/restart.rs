//! **Restart**: deliver everything, then deliver everything again from a
//! *new process*. All of the second round must be duplicates.
//!
//! The second round really runs in another process (see `process.rs`), so
//! an inbox that remembers processed ids in memory instead of in the
//! database is caught: reopening a connection in the same process would
//! not notice.

use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use super::process::{
    Assignment, SECOND_PROCESS_TEST, from_lines, second_process, summary_from_json,
    summary_to_json, to_lines,
};
use crate::harness::deliver_all;
use crate::harness::{Fixture, PlayOf, Project};
use crate::harness::{
    InboxUnderTest, Play, Subject, Violation, facts, fixture_for, hangs, observe,
};

/// The step observed after the first process's round.
pub const FIRST_PROCESS: &str = "after the first process";

pub fn play_restart<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "restart via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = facts(subject, "m-", count);
    let first = {
        let mut worker = inbox.open(&fixture);
        deliver_all(worker.as_mut(), handler.as_ref(), &messages)
    };
    let after_first = observe(&fixture, subject, first);
    let mut outcomes = first;
    outcomes += second_process_round(&fixture, inbox, handler.consumer(), &messages);
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
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    play_restart(subject, inbox, count).judge(subject)
}

/// Runs the second round in a new process and returns its outcomes.
fn second_process_round<P: Project>(
    fixture: &P::Fixture,
    inbox: &dyn InboxUnderTest<P>,
    consumer: &str,
    messages: &[Message<P::Event>],
) -> Summary {
    let folder = tempfile::tempdir().expect("temporary folder");
    let (input, output) = (
        folder.path().join("in.jsonl"),
        folder.path().join("out.json"),
    );
    std::fs::write(&input, to_lines(messages).join("\n")).expect("write the messages");
    let assignment = serde_json::json!({
        "kind": "restart",
        "fixture": fixture.location(),
        "inbox": inbox.name(),
        "consumer": consumer,
        "input": input,
        "output": output,
    });
    let waiting = hangs::waiting_for_process("the second process's round");
    let run = second_process(&assignment)
        .output()
        .expect("start the second process");
    drop(waiting);
    let report = std::fs::read_to_string(&output).unwrap_or_else(|_| {
        panic!(
            "the second process reported nothing (does this test binary declare `{SECOND_PROCESS_TEST}`?):\n{}\n{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        )
    });
    summary_from_json(&serde_json::from_str(&report).expect("the second process's report"))
}

/// The second process's part: delivers the input once and reports.
pub(super) fn second_round<P: Project>(assignment: &Assignment<P>) {
    let input = std::fs::read_to_string(assignment.text("input")).expect("the messages");
    let messages: Vec<Message<P::Event>> = from_lines(input.lines());
    let mut worker = assignment.inbox.open(&assignment.fixture);
    let outcomes = deliver_all(worker.as_mut(), assignment.handler.as_ref(), &messages);
    std::fs::write(
        assignment.text("output"),
        summary_to_json(&outcomes).to_string(),
    )
    .expect("write the report");
}
