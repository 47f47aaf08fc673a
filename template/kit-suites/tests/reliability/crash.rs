//! Crash-kill: `run` is killed with SIGKILL again and again, each time
//! right after a randomly chosen committed batch, restarted from the start
//! of its input each time (as a broker redelivers everything not
//! acknowledged), and finally allowed to finish. The result must be the
//! once-only state: no debit lost, none doubled, the inbox row count exact,
//! and the database intact.
//!
//! Kills follow `run`'s progress lines, not a timer: each run is held
//! right after the chosen commit (`--pause-after-progress`) and killed
//! there, so every kill lands mid-run on any machine, fast or slow, debug
//! or release, alone or under load (see `support::kill`).
//!
//! `CRASH_KILLS` sets the number of kills (default 20); `CRASH_SEED`
//! replays a run (the seed is printed).

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use {{crate_name}}::inbox::{DeadLetters, Policy};
use {{crate_name}}::pipeline::PROGRESS_LINE;
use {{crate_name}}::store::Store;

use crate::consumer;
use crate::support::database::Fixture;
use crate::support::harness::{Prng, env_number, inbox_rows};
use crate::support::kill::{Running, kill_at_progress};

const LINES: u64 = 10_000;
const ACCOUNTS: i64 = 7;
const OPENING_BALANCE: i64 = 1_000_000;

/// Writes the input (a third of the lines are redeliveries) and returns
/// the once-only total debited per account and the number of distinct
/// messages.
fn write_input(path: &Path, random: &mut Prng) -> (BTreeMap<i64, i64>, usize) {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut expected = BTreeMap::new();
    let mut distinct = 0;
    for _ in 0..LINES {
        let redelivery = distinct > 0 && random.below(3) == 0;
        let id = if redelivery {
            random.below(distinct)
        } else {
            distinct += 1;
            distinct - 1
        };
        let (account, amount) = (1 + (id % ACCOUNTS as u64) as i64, 1 + (id % 97) as i64);
        if !redelivery {
            *expected.entry(account).or_insert(0) += amount;
        }
        let line = serde_json::json!({
            "id": format!("c-{id}"),
            "type": "payment.captured",
            "payload": { "account": account, "amount": amount },
        });
        writeln!(out, "{line}").unwrap();
    }
    (expected, distinct as usize)
}

#[test]
fn crash_kill_at_progress_points_then_finish_gives_the_once_only_state() {
    let kills = env_number("CRASH_KILLS", 20);
    let mut random = Prng::from_env("CRASH_SEED");
    let fixture = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.jsonl");
    let (expected, distinct) = write_input(&input, &mut random);
    let database = fixture.database();
    database
        .with_tables(|tables| {
            (1..=ACCOUNTS).try_for_each(|account| tables.open_account(account, OPENING_BALANCE))
        })
        .unwrap();

    let mut landed = 0;
    for kill in 1..=kills {
        // Alternate one transaction per message and batches of 256, so a
        // kill can land between any two statements of either path. A full
        // run commits at least one batch per line, or per 256 lines; the
        // kill follows a batch among the first nine tenths of those.
        let batch: u64 = if kill % 2 == 0 { 1 } else { 256 };
        let fewest_commits = LINES.div_ceil(batch);
        let after = 1 + random.below(fewest_commits * 9 / 10);
        let mut command = consumer(&fixture);
        command
            .args(["run", "--batch-size", &batch.to_string()])
            .arg(&input);
        let outcome = kill_at_progress(command, PROGRESS_LINE, after);
        assert!(
            outcome.landed_mid_run,
            "kill {kill} of {kills} (after commit {after} of at least {fewest_commits}) did not land mid-run: \
             `run` printed {} progress lines and ended on its own ({}):\n{}",
            outcome.progress_seen, outcome.status, outcome.other_output
        );
        landed += 1;
    }
    println!("crash test: kills landed mid-run: {landed} of {kills}");

    let finished = consumer(&fixture).arg("run").arg(&input).output().unwrap();
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );

    assert_eq!(fixture.integrity_problems(), None);
    let (balances, notifications) = database
        .with_tables(|tables| Ok((tables.balances()?, tables.notifications()?)))
        .unwrap();
    let expected_balances: Vec<(i64, i64)> = (1..=ACCOUNTS)
        .map(|account| {
            (
                account,
                OPENING_BALANCE - expected.get(&account).unwrap_or(&0),
            )
        })
        .collect();
    assert_eq!(balances, expected_balances, "a debit was lost or doubled");
    assert_eq!(inbox_rows(&fixture, "debit"), distinct);
    assert_eq!(inbox_rows(&fixture, "notify"), distinct);
    assert_eq!(
        notifications.len(),
        2 * distinct,
        "one email and one push per message"
    );
    let dead = database
        .inbox(Policy::default())
        .unwrap()
        .dead_letters()
        .unwrap();
    assert!(dead.is_empty(), "{dead:?}");
    println!(
        "crash test: survived {kills} kills; {distinct} messages, {} notifications, integrity ok",
        notifications.len()
    );
}

/// Whether a process with this pid exists (running, stopped or a zombie).
fn exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only asks whether the pid exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn a_process_a_test_did_not_stop_is_killed_with_it() {
    // Stands for a `consume` or a relay started by a test that fails
    // before stopping it: the failure unwinds, dropping what the test
    // held, and without the kill the process would run on, taking later
    // tests' work.
    let mut started = Running::start(
        Command::new("sleep")
            .arg("600")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let pid = libc::pid_t::try_from(started.child().id()).expect("a pid");
    assert!(exists(pid));
    drop(started);
    let outlived = exists(pid);
    if outlived {
        // SAFETY: our own child, never reaped (the guard did not wait).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!outlived, "process {pid} outlived the test that started it");
}
