//! The relay killed with SIGKILL right after sending a batch and before
//! marking it, again and again, then allowed to finish: every row is
//! delivered at least once, a resend carries the same key, and the
//! receiver's inbox applies each row once.

use std::collections::BTreeSet;
use std::process::Command;

use {{crate_name}}::relay::PROGRESS_LINE;

use crate::support::harness::Prng;
use crate::support::kill::kill_at_progress;
use crate::{key_of, keys_of, outbox_with, receive};

#[test]
fn a_relay_killed_between_sending_and_marking_sends_again_and_the_receiver_applies_once() {
    let fixture = outbox_with(200);
    let folder = tempfile::tempdir().unwrap();
    let output = folder.path().join("sent.jsonl");
    // `--until-done`: the last run, never killed, ends by itself once every
    // row is sent instead of waiting for more.
    let relay = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"));
        command
            .args(fixture.cli_args())
            .args([
                "relay",
                "send",
                "--until-done",
                "--batch-size",
                "5",
                "--output",
            ])
            .arg(&output);
        command
    };
    let mut random = Prng::from_env("RELAY_KILL_SEED");
    const KILLS: u64 = 5;
    for kill in 1..=KILLS {
        // 400 rows in batches of 5: each kill follows one of the first
        // three batches of its run, held after sending it and before
        // marking it.
        let after = 1 + random.below(3);
        let run = kill_at_progress(relay(), PROGRESS_LINE, after);
        assert!(
            run.landed_mid_run,
            "kill {kill} (after batch {after}) did not land mid-run ({}):\n{}",
            run.status, run.other_output
        );
    }
    println!("relay crash test: kills landed mid-run: {KILLS} of {KILLS}");
    let finished = relay().output().unwrap();
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );

    let lines: Vec<String> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let distinct: BTreeSet<String> = lines.iter().map(|line| key_of(line)).collect();
    assert_eq!(distinct, keys_of(&fixture), "a row was never delivered");
    let resends = lines.len() - distinct.len();
    assert!(
        resends > 0,
        "no kill landed between a send and its mark: the test proved nothing"
    );
    let (applied, duplicates) = receive(&lines);
    assert_eq!(
        applied as usize,
        distinct.len(),
        "the receiver applied each once"
    );
    assert_eq!(duplicates as usize, resends, "and caught every resend");
    println!(
        "relay crash test: {KILLS} kills, {} rows, {} lines sent, {resends} resends, {duplicates} duplicates absorbed by the receiver",
        distinct.len(),
        lines.len()
    );
}
