//! The retrofit corpus: consumers inbox-kit did not generate, each with its
//! own flaw and shape, beside the reference retrofit that
//! `prompts/retrofit-existing-consumer.md` should lead to. Each entry is a
//! small crate in `tests/retrofit/corpus/<name>/` with one file of required
//! tests, built twice: as found, and with `--features retrofitted`.
//!
//! For every entry this proves that the required tests
//! - fail against the original, on assertions, and exactly the tests listed
//!   here as catching its flaw (the others pass, each for a stated reason:
//!   the "some pass" rule of the prompt, as data);
//! - pass against the reference retrofit;
//! - catch the retrofit with its migration forgotten, where the original
//!   itself cannot show that the migration test has teeth.
//!
//! All entries build into the shared target directory of the generated
//! projects, so their dependencies compile once.

mod common;

use std::collections::BTreeMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use common::{cargo, kit_root};

/// What one required test does against the original consumer.
#[derive(Clone, Copy, Debug)]
enum Against {
    /// It fails on an assertion: it sees this flaw.
    Catches(&'static str),
    /// It passes: the flaw is invisible to it, for this reason.
    Passes(&'static str),
}
use Against::{Catches, Passes};

struct Entry {
    /// Its folder in `tests/retrofit/corpus/`.
    name: &'static str,
    postgres: bool,
    /// Every test in its `tests/required.rs`, and what it does against the
    /// original.
    tests: &'static [(&'static str, Against)],
    /// Features that switch one mistake on in the retrofit, each with the
    /// tests that must catch it (and only those fail).
    mutants: &'static [(&'static str, &'static [&'static str])],
}

const CORPUS: [Entry; 5] = [
    Entry {
        name: "check-then-act",
        postgres: false,
        tests: &[
            (
                "run_twice_applies_each_event_once",
                Passes("one worker always finds the record of its own first delivery"),
            ),
            (
                "parallel_workers_apply_each_event_once",
                Catches(
                    "check-then-act: several workers pass the SELECT before any of them records the event",
                ),
            ),
            (
                "failure_then_redelivery_applies_once",
                Catches(
                    "no transaction: the debit of the failed attempt stays, and the redelivery debits again",
                ),
            ),
            (
                "failed_event_is_retried_without_a_resend",
                Catches("failed events are logged and dropped: nothing ever delivers them again"),
            ),
            (
                "poison_event_is_counted_then_dead_lettered",
                Catches("no failure counting and no dead letters"),
            ),
            (
                "migration_keeps_processed_ids_duplicates",
                Passes(
                    "the original reads processed_events itself; the test guards the retrofit's migration",
                ),
            ),
            (
                "report_lists_past_double_applications",
                Catches("nothing reports the events check-then-act already applied twice"),
            ),
        ],
        mutants: &[(
            "forget-migration",
            &["migration_keeps_processed_ids_duplicates"],
        )],
    },
    Entry {
        name: "record-first",
        postgres: false,
        tests: &[
            (
                "run_twice_reserves_once",
                Passes("the recorded id stops every later delivery"),
            ),
            (
                "parallel_workers_reserve_once",
                Passes("the id's own INSERT is atomic: exactly one worker records it"),
            ),
            (
                "failure_then_redelivery_reserves_once",
                Catches(
                    "record-first: the id is committed before the update fails, so the redelivery is taken for a duplicate and the reservation is lost",
                ),
            ),
            (
                "poison_message_is_counted_then_dead_lettered",
                Catches(
                    "no failure counting and no dead letters: the second delivery is acknowledged as a duplicate",
                ),
            ),
            (
                "migration_keeps_processed_ids_duplicates",
                Passes(
                    "the original reads processed itself; the test guards the retrofit's migration",
                ),
            ),
            (
                "report_lists_lost_messages",
                Catches("nothing reports the messages record-first already lost"),
            ),
        ],
        // The report reads the migrated inbox, so it misses the lost ids too.
        mutants: &[(
            "forget-migration",
            &[
                "migration_keeps_processed_ids_duplicates",
                "report_lists_lost_messages",
            ],
        )],
    },
    Entry {
        name: "ignored-conflict",
        postgres: true,
        tests: &[
            (
                "run_twice_awards_once",
                Catches(
                    "the zero-row result of ON CONFLICT DO NOTHING is ignored: every duplicate awards again",
                ),
            ),
            (
                "parallel_workers_award_once",
                Catches(
                    "the zero-row result of ON CONFLICT DO NOTHING is ignored: every worker awards",
                ),
            ),
            (
                "failure_then_redelivery_awards_once",
                Passes(
                    "one transaction: the failed attempt leaves nothing behind, inbox row included",
                ),
            ),
            (
                "poison_message_is_counted_then_dead_lettered",
                Catches(
                    "no failure counting and no dead letters: the broker is asked for redeliveries forever",
                ),
            ),
            (
                "migration_keeps_inbox_ids_duplicates",
                Catches("the ids already in its inbox are awarded again"),
            ),
            (
                "report_lists_past_double_awards",
                Catches(
                    "nothing reports the double awards, and nothing keeps the unique key off a table that holds them",
                ),
            ),
        ],
        mutants: &[],
    },
    Entry {
        name: "key-without-consumer",
        postgres: false,
        tests: &[
            (
                "run_twice_bills_once",
                Passes("one consumer alone never meets another consumer's record"),
            ),
            (
                "parallel_workers_bill_once",
                Passes("insert-first in one transaction: only the key is wrong"),
            ),
            (
                "failure_then_redelivery_bills_once",
                Passes("insert-first in one transaction: the failed attempt leaves nothing"),
            ),
            (
                "two_consumers_each_apply_once",
                Catches(
                    "the key is the message id alone: shipping finds billing's record and never ships",
                ),
            ),
            (
                "poison_message_is_counted_then_dead_lettered",
                Catches(
                    "no failure counting and no dead letters: the broker is asked for redeliveries forever",
                ),
            ),
            (
                "migration_keeps_each_consumers_ids_duplicates",
                Catches("the old key still hides from shipping the orders it skipped"),
            ),
            (
                "report_lists_skipped_messages",
                Catches("nothing reports the orders shipping skipped"),
            ),
        ],
        mutants: &[],
    },
    Entry {
        name: "live-processed",
        postgres: true,
        tests: &[
            (
                "run_twice_credits_once",
                Passes("one worker always finds the record of its own first delivery"),
            ),
            (
                "parallel_workers_credit_once",
                Catches(
                    "check-then-act: SELECT ... FOR UPDATE locks nothing while the row does not exist",
                ),
            ),
            (
                "failure_then_redelivery_credits_once",
                Passes("one transaction: the failed attempt leaves nothing behind"),
            ),
            (
                "poison_message_is_counted_then_dead_lettered",
                Catches(
                    "no failure counting and no dead letters: the broker is asked for redeliveries forever",
                ),
            ),
            (
                "migration_keeps_processed_ids_duplicates",
                Passes(
                    "the original reads processed itself; the test guards the retrofit's migration",
                ),
            ),
            (
                "report_lists_past_double_credits",
                Catches("nothing reports the credits check-then-act already applied twice"),
            ),
        ],
        mutants: &[(
            "forget-migration",
            &["migration_keeps_processed_ids_duplicates"],
        )],
    },
];

fn corpus_dir() -> PathBuf {
    kit_root().join("tests/retrofit/corpus")
}

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Fails, saying how to start one, unless a PostgreSQL server listens where
/// `DATABASE_URL` points: the PostgreSQL entries must never skip silently.
fn require_postgres(entry: &str) {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_owned());
    let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let authority = after_scheme.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    if host_port.is_empty() {
        return; // a Unix socket: the corpus tests report a failure themselves
    }
    let address = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    };
    let reachable = address.to_socket_addrs().is_ok_and(|mut addresses| {
        addresses
            .any(|address| TcpStream::connect_timeout(&address, Duration::from_secs(3)).is_ok())
    });
    assert!(
        reachable,
        "the corpus entry `{entry}` needs PostgreSQL, and nothing answers at {address} \
         (DATABASE_URL={url}). Start the local server, on Debian: \
         pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start \
         (trust auth for user postgres, database test), or point DATABASE_URL at one \
         where the user may create schemas."
    );
}

/// The outcome of one `cargo test` of an entry.
struct Run {
    success: bool,
    /// Test name -> passed.
    results: BTreeMap<String, bool>,
    /// Test name -> its captured output, for failed tests.
    failures: BTreeMap<String, String>,
    log: String,
}

fn run(entry: &Entry, features: &str) -> Run {
    let dir = corpus_dir().join(entry.name);
    let mut args = vec!["test", "--locked", "--test", "required"];
    if !features.is_empty() {
        args.extend(["--features", features]);
    }
    let output = cargo(&dir, &args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let log = format!(
        "`cargo {}` in {}:\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        args.join(" "),
        dir.display()
    );
    assert!(
        !stderr.lines().any(|line| line.starts_with("warning:")),
        "the build warned:\n{log}"
    );
    let results = stdout
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test ")?;
            let (name, verdict) = rest.rsplit_once(" ... ")?;
            match verdict {
                "ok" => Some((name.to_owned(), true)),
                "FAILED" => Some((name.to_owned(), false)),
                _ => None,
            }
        })
        .collect();
    let mut failures = BTreeMap::new();
    for section in stdout.split("\n---- ").skip(1) {
        if let Some((name, rest)) = section.split_once(" stdout ----") {
            let end = rest.find("\nfailures:\n").unwrap_or(rest.len());
            failures.insert(name.to_owned(), rest[..end].to_owned());
        }
    }
    Run {
        success: output.status.success(),
        results,
        failures,
        log,
    }
}

/// Checks that `run` ran exactly the entry's tests, that those in `failing`
/// (name, the flaw it must see) failed on an assertion of expected values,
/// and that the others passed.
fn assert_outcome(entry: &Entry, variant: &str, run: &Run, failing: &[(&str, &str)]) {
    let expected: Vec<&str> = entry.tests.iter().map(|(name, _)| *name).collect();
    let ran: Vec<&str> = run.results.keys().map(String::as_str).collect();
    let mut sorted = expected.clone();
    sorted.sort();
    assert_eq!(
        ran, sorted,
        "{}, {variant}: the tests that ran are not the entry's tests\n{}",
        entry.name, run.log
    );
    for (name, against) in entry.tests {
        let passed = run.results[*name];
        if let Some((_, flaw)) = failing.iter().find(|(failing, _)| failing == name) {
            assert!(
                !passed,
                "{}, {variant}: `{name}` passed, yet it should see this flaw: {flaw}\n{}",
                entry.name, run.log
            );
            let output = &run.failures[*name];
            assert!(
                output.contains("assertion `left == right` failed"),
                "{}, {variant}: `{name}` failed, but not on an assertion of expected values \
                 (a set-up panic or a crash says nothing about the flaw):\n{output}",
                entry.name
            );
        } else {
            let why = match against {
                Passes(why) if variant == AS_FOUND => why,
                _ => "the retrofit is right against it",
            };
            assert!(
                passed,
                "{}, {variant}: `{name}` failed, yet it should pass ({why}):\n{}",
                entry.name,
                run.failures
                    .get(*name)
                    .map_or(run.log.as_str(), String::as_str)
            );
        }
    }
    assert_eq!(
        run.success,
        failing.is_empty(),
        "{}, {variant}: cargo's exit status disagrees with the tests\n{}",
        entry.name,
        run.log
    );
}

const AS_FOUND: &str = "as found";

fn judge(name: &str) {
    let entry = CORPUS
        .iter()
        .find(|entry| entry.name == name)
        .expect("an entry of CORPUS");
    if entry.postgres {
        require_postgres(entry.name);
    }
    let caught: Vec<(&str, &str)> = entry
        .tests
        .iter()
        .filter_map(|(name, against)| match against {
            Catches(flaw) => Some((*name, *flaw)),
            Passes(_) => None,
        })
        .collect();
    assert!(!caught.is_empty(), "{name}: no test catches the original");
    assert_outcome(entry, AS_FOUND, &run(entry, ""), &caught);
    assert_outcome(entry, "retrofitted", &run(entry, "retrofitted"), &[]);
    for (mutant, catchers) in entry.mutants {
        let features = format!("retrofitted,{mutant}");
        let flaw = format!("the retrofit built with `{mutant}`");
        let failing: Vec<(&str, &str)> =
            catchers.iter().map(|name| (*name, flaw.as_str())).collect();
        assert_outcome(entry, &features, &run(entry, &features), &failing);
    }
}

#[test]
fn check_then_act() {
    judge("check-then-act");
}

#[test]
fn record_first() {
    judge("record-first");
}

#[test]
fn ignored_conflict() {
    judge("ignored-conflict");
}

#[test]
fn key_without_consumer() {
    judge("key-without-consumer");
}

#[test]
fn live_processed() {
    judge("live-processed");
}

/// Every folder of the corpus is judged above, and every entry is a
/// self-contained crate with its lock file, kept out of the kit's build.
#[test]
fn every_corpus_folder_is_an_entry() {
    let mut folders: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("the corpus folder")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut entries: Vec<String> = CORPUS.iter().map(|entry| entry.name.to_owned()).collect();
    entries.sort();
    assert_eq!(folders, entries, "corpus folders and CORPUS entries differ");
    for entry in &CORPUS {
        let dir = corpus_dir().join(entry.name);
        for file in [
            "Cargo.toml",
            "Cargo.lock",
            "tests/required.rs",
            "src/lib.rs",
        ] {
            assert!(dir.join(file).is_file(), "{}: no {file}", entry.name);
        }
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("\n[workspace]"),
            "{}: its Cargo.toml needs an empty [workspace] so it never joins another",
            entry.name
        );
        assert!(
            manifest.contains("retrofitted = []"),
            "{}: no `retrofitted` feature",
            entry.name
        );
        for (mutant, _) in entry.mutants {
            assert!(
                manifest.contains(&format!("{mutant} = [")),
                "{}: no `{mutant}` feature",
                entry.name
            );
        }
    }
    let kit_manifest = std::fs::read_to_string(kit_root().join("Cargo.toml")).unwrap();
    assert!(
        kit_manifest.contains("\"tests/retrofit/corpus/\""),
        "the kit's Cargo.toml must exclude the corpus from its package"
    );
}
