//! The `consume` command as a process: killed with SIGKILL right after a
//! transaction committed and before its offsets were (the process is held
//! there, see `support::kill`), restarted, once-only at the end; and
//! stopped with SIGTERM (it finishes and commits the offsets of what it
//! took, then exits 0).

use std::process::Command;

use {{crate_name}}::pipeline::PROGRESS_LINE;

use crate::PATIENCE;
use crate::kit::consume::consume_to_the_end;
use crate::kit::summary::field;
use crate::support::database::Fixture;
use crate::support::harness::{Prng, RealInbox, assert_applied_once, fixture_for, inbox_rows};
use crate::support::kafka::Broker;
use crate::support::kill::{hold_at_progress, signal_at_progress};
use crate::support::subjects::{DebitSubject, payments};

pub const GROUP: &str = "processes";

/// `consume` on `fixture`'s database and `broker`'s topic, small batches,
/// a progress line per commit.
pub fn consume(fixture: &Fixture, broker: &Broker) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"));
    command
        .args(fixture.cli_args())
        .arg("consume")
        .args(broker.cli_args(GROUP))
        .args(["--progress-lines", "--batch-size", "8"]);
    command
}

/// Records the group has committed, over the partitions (a fresh topic
/// starts at 0).
pub fn committed(broker: &Broker) -> u64 {
    broker
        .committed(GROUP)
        .into_iter()
        .flatten()
        .map(|offset| u64::try_from(offset).unwrap_or(0))
        .sum()
}

#[test]
fn consume_killed_before_its_offset_commit_and_restarted_ends_once_only() {
    let broker = Broker::start();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(150);
    for message in &messages {
        broker.publish(message);
    }
    let mut random = Prng::from_env("BROKER_KILL_SEED");
    // 150 records in batches of 8 make at least 19 commits: each kill
    // lands after one of the first four of its run.
    const KILLS: u64 = 4;
    let mut before_commit = 0;
    for kill in 1..=KILLS {
        let after = 1 + random.below(4);
        let held = hold_at_progress(consume(&fixture, &broker), PROGRESS_LINE, after)
            .unwrap_or_else(|ended| {
                panic!(
                    "kill {kill} (after commit {after}) could not be held mid-run ({}):\n{}",
                    ended.status, ended.other_output
                )
            });
        // Held right after a transaction: what the database has and the
        // group has not committed comes back after the restart.
        let (applied, offsets) = (inbox_rows(&fixture, "debit") as u64, committed(&broker));
        if applied > offsets {
            before_commit += 1;
        }
        let run = held.kill();
        assert!(run.landed_mid_run, "{}", run.other_output);
    }
    println!("kills landed mid-run: {KILLS} of {KILLS}, before the offset commit: {before_commit}");
    assert!(
        before_commit > 0,
        "no kill landed between a transaction and its offset commit"
    );
    let summary = consume_to_the_end(consume(&fixture, &broker), || {
        broker.drained(GROUP, PATIENCE)
    });
    let summary = summary.trim();
    println!("after {KILLS} kills: {summary}");
    assert!(
        field(summary, "duplicate") > 0,
        "what the killed process applied and did not commit never came back: {summary}"
    );
    assert_applied_once(&fixture, &debit, &messages);
    assert_eq!(inbox_rows(&fixture, "debit"), 150);
}

#[test]
fn sigterm_finishes_and_commits_what_was_taken_then_exits_0() {
    let broker = Broker::start();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    for message in &payments(100) {
        broker.publish(message);
    }
    let run = signal_at_progress(consume(&fixture, &broker), PROGRESS_LINE, 2, libc::SIGTERM);
    assert!(run.landed_mid_run, "{}", run.other_output);
    assert!(
        run.status.success(),
        "SIGTERM ended consume with {}:\n{}",
        run.status,
        run.other_output
    );
    let summary = run.stdout.trim();
    assert!(summary.contains("applied="), "no summary: {summary:?}");
    assert_eq!(
        committed(&broker),
        inbox_rows(&fixture, "debit") as u64,
        "what it applied before SIGTERM is not what it committed: {summary}"
    );
    assert!(field(summary, "commits") > 0, "{summary}");
}
