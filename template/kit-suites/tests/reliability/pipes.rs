//! A closed standard output: `status | head -1`, a pager quit early, a
//! script that read what it needed. Every command that prints exits
//! quietly (no panic, no backtrace, exit code 0 or 141, the shell's code
//! for a closed pipe), and what it did before it printed stays done.
//!
//! The read end of the pipe is closed before the command starts, so every
//! write fails: the harshest case, and the same on every run (with a real
//! `head`, whether a write fails depends on who is faster).

use std::os::unix::process::ExitStatusExt;
use std::process::{Output, Stdio};

use crate::consumer;
use crate::kit::summary::field;
use crate::support::database::Fixture;

/// A pipe whose read end is already closed, as a child's stdout.
///
/// `std::io::pipe` makes both ends close-on-exec: the tests beside this one
/// start processes of their own, and one started while the read end was
/// still open would otherwise inherit it and keep it open, so this
/// command's writes would succeed (seen once in CI with `libc::pipe`:
/// `dead-letters redrive` ended with its own exit code 4, not a closed
/// pipe's).
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    Stdio::from(writer)
}

/// Runs the consumer on `fixture` with `args`, its stdout closed.
fn with_closed_stdout(fixture: &Fixture, args: &[&str]) -> Output {
    consumer(fixture)
        .args(args)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("run the consumer")
}

/// Asserts that a command whose stdout was closed ended quietly.
#[track_caller]
fn assert_quiet(args: &[&str], output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let status = output.status;
    let quiet_exit =
        matches!(status.code(), Some(0 | 141)) || status.signal() == Some(libc::SIGPIPE);
    assert!(
        quiet_exit,
        "`{}` ended with {status} on a closed stdout:\n{stderr}",
        args.join(" ")
    );
    let noisy = stderr.lines().find(|line| {
        ["panicked", "backtrace", "Broken pipe"]
            .iter()
            .any(|noise| line.contains(noise))
            || line.starts_with("error:")
    });
    assert!(
        noisy.is_none(),
        "`{}` complained about a closed stdout:\n{stderr}",
        args.join(" ")
    );
}

/// An input of `count` payments from account 1, and one from an account
/// that does not exist (it is dead-lettered after one attempt).
fn input(folder: &std::path::Path, count: usize) -> String {
    let mut lines: Vec<String> = (1..=count)
        .map(|n| {
            serde_json::json!({
                "id": format!("pipe-{n}"),
                "type": "payment.captured",
                "payload": { "account": 1, "amount": 10 },
            })
            .to_string()
        })
        .collect();
    lines.push(
        serde_json::json!({
            "id": "pipe-poison",
            "type": "payment.captured",
            "payload": { "account": 999, "amount": 10 },
        })
        .to_string(),
    );
    let path = folder.join("in.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn every_command_that_prints_exits_quietly_on_a_closed_stdout() {
    let fixture = Fixture::new();
    let folder = tempfile::tempdir().unwrap();
    let input = input(folder.path(), 20);
    let commands: [&[&str]; 11] = [
        &["open-account", "1", "1000"],
        &["migrate"],
        &["run", &input, "--max-attempts", "1"],
        &["status"],
        &["dead-letters", "list"],
        &["dead-letters", "redrive"],
        &["purge", "--older-than", "30d"],
        &["relay", "parked"],
        &["relay", "requeue"],
        &["relay", "send", "--until-done", "--output", "-"],
        &["--help"],
    ];
    for args in commands {
        assert_quiet(args, &with_closed_stdout(&fixture, args));
    }
}

#[test]
fn a_run_whose_stdout_is_closed_still_commits_every_delivery() {
    let fixture = Fixture::new();
    let folder = tempfile::tempdir().unwrap();
    let input = input(folder.path(), 20);
    assert!(
        crate::run_consumer(&fixture, &["open-account", "1", "1000"])
            .status
            .success()
    );
    let args = ["run", &input, "--max-attempts", "1"];
    assert_quiet(&args, &with_closed_stdout(&fixture, &args));
    let again = crate::run_consumer(&fixture, &args);
    let summary = String::from_utf8_lossy(&again.stdout);
    assert_eq!(field(&summary, "applied"), 0, "{summary}");
    assert_eq!(
        field(&summary, "duplicate"),
        2 * 21,
        "every delivery of the closed run committed (the poison one as a dead letter): {summary}"
    );
}

#[test]
fn a_relay_whose_stdout_is_closed_marks_nothing_sent_and_blames_no_row() {
    let fixture = Fixture::new();
    let folder = tempfile::tempdir().unwrap();
    let input = input(folder.path(), 5);
    assert!(
        crate::run_consumer(&fixture, &["open-account", "1", "1000"])
            .status
            .success()
    );
    crate::run_consumer(&fixture, &["run", &input]);
    let args = ["relay", "send", "--until-done", "--output", "-"];
    assert_quiet(&args, &with_closed_stdout(&fixture, &args));
    let parked = crate::run_consumer(&fixture, &["relay", "parked"]);
    assert_eq!(
        String::from_utf8_lossy(&parked.stdout),
        "parked=0\n",
        "a closed output is not the notifications' fault"
    );
    let file = folder.path().join("sent.jsonl");
    let resent = crate::run_consumer(
        &fixture,
        &[
            "relay",
            "send",
            "--until-done",
            "--output",
            file.to_str().unwrap(),
        ],
    );
    let summary = String::from_utf8_lossy(&resent.stdout);
    assert_eq!(
        field(&summary, "sent"),
        2 * 6,
        "every notification (6 payments, 2 channels) is still to send: {summary}"
    );
}
