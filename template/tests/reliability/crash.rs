//! Crash-kill: `run` is killed with SIGKILL at random points, restarted
//! from the start of its input each time (as a broker redelivers everything
//! not acknowledged), and finally allowed to finish. The result must be the
//! once-only state: no debit lost, none doubled, the inbox row count exact,
//! and the database file intact.
//!
//! `CRASH_KILLS` sets the number of kills (default 20);
//! `CRASH_SEED` replays a run (the seed is printed).

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::Connection;

use crate::consumer;

const LINES: u64 = 40_000;
const ACCOUNTS: u64 = 7;

/// A small deterministic generator, so a failing run can be replayed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// Writes the input (a third of the lines are redeliveries) and returns
/// the once-only total debited per account and the distinct messages.
fn write_input(path: &Path, random: &mut XorShift) -> (BTreeMap<i64, i64>, i64) {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut expected = BTreeMap::new();
    let mut distinct = 0;
    for _ in 0..LINES {
        let redelivery = distinct > 0 && random.next(3) == 0;
        let id = if redelivery {
            random.next(distinct)
        } else {
            distinct += 1;
            distinct - 1
        };
        let (account, amount) = ((1 + id % ACCOUNTS) as i64, 1 + (id % 97) as i64);
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
    (expected, distinct as i64)
}

#[test]
fn crash_kill_again_and_again_then_finish_gives_the_once_only_state() {
    let kills: u32 =
        std::env::var("CRASH_KILLS").map_or(20, |v| v.parse().expect("CRASH_KILLS: a number"));
    let seed = std::env::var("CRASH_SEED").map_or_else(
        |_| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        },
        |v| v.parse().expect("CRASH_SEED: a number"),
    );
    println!("crash test: {kills} kills, CRASH_SEED={seed}");
    let mut random = XorShift(seed);
    let dir = tempfile::tempdir().unwrap();
    let (db, input) = (dir.path().join("crash.db"), dir.path().join("input.jsonl"));
    let (expected, distinct) = write_input(&input, &mut random);
    for account in 1..=ACCOUNTS {
        let opened = consumer(&db)
            .args(["open-account", &account.to_string(), "1000000"])
            .output()
            .unwrap();
        assert!(opened.status.success());
    }

    let mut killed_mid_run = 0;
    for kill in 0..kills {
        // Alternate one transaction per message and batches, so a kill can
        // land between any two statements of either path.
        let batch = if kill % 2 == 0 { "1" } else { "256" };
        let mut child = consumer(&db)
            .args(["run", "--batch-size", batch])
            .arg(&input)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(5 + random.next(400)));
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }
    println!("crash test: {killed_mid_run} of {kills} kills landed while `run` was working");
    assert!(
        killed_mid_run * 2 >= kills,
        "most kills should land mid-run; make the input longer"
    );

    let finished = consumer(&db).arg("run").arg(&input).output().unwrap();
    assert!(
        finished.status.success(),
        "{}",
        String::from_utf8_lossy(&finished.stderr)
    );

    let db = Connection::open(&db).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    for (account, debited) in &expected {
        let balance: i64 = db
            .query_row(
                "SELECT balance FROM accounts WHERE id = ?1",
                [account],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(
            balance,
            1_000_000 - debited,
            "account {account}: a debit was lost or doubled"
        );
    }
    let count = |sql: &str| -> i64 { db.query_row(sql, [], |row| row.get(0)).unwrap() };
    assert_eq!(
        count("SELECT count(*) FROM inbox WHERE consumer = 'debit'"),
        distinct
    );
    assert_eq!(
        count("SELECT count(*) FROM inbox WHERE consumer = 'notify'"),
        distinct
    );
    let notifications = count("SELECT count(*) FROM notifications");
    assert_eq!(
        notifications,
        2 * distinct,
        "one email and one push per message"
    );
    assert_eq!(count("SELECT count(*) FROM dead_letters"), 0);
    println!(
        "crash test: survived {killed_mid_run} kills mid-run; {notifications} notifications, integrity ok"
    );
}
