//! Hostile input through the real binary: every bad line of the corpus in
//! `tests/data/hostile.jsonl`, plus a multi-megabyte line, is rejected with
//! its line number and reason; the valid lines around them all apply; the
//! exit code reports the rejects; nothing panics.

use std::io::Write;

use crate::run_consumer;
use crate::support::database::Fixture;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hostile.jsonl");

/// (line, start of the reason) for every line the corpus must reject.
const EXPECTED_REJECTS: [(u32, &str); 18] = [
    (2, "invalid JSON: EOF while parsing"),
    (
        3,
        "not a valid envelope: invalid length 0, expected a JSON object",
    ),
    (4, "missing field `id`"),
    (5, "message id is empty"),
    (6, "message id is 201 bytes long; the limit is 200"),
    (7, "field `id` must be a string"),
    (8, "unknown type `refund.issued`"),
    (
        9,
        "bad payload for `payment.captured`: invalid type: string \"one\"",
    ),
    (
        10,
        "bad payload for `payment.captured`: amount must be between 1 and",
    ),
    (
        11,
        "bad payload for `payment.captured`: invalid type: floating point",
    ),
    (12, "line is not valid UTF-8"),
    (14, "missing field `payload`"),
    (15, "not a valid envelope: invalid type: null"),
    (16, "message id contains a control character"),
    (17, "missing field `type`"),
    (
        18,
        "bad payload for `payment.captured`: missing field `amount`",
    ),
    (19, "invalid JSON: expected value"),
    (22, "line is longer than 1048576 bytes"),
];

#[test]
fn hostile_lines_are_rejected_one_by_one_and_valid_ones_all_apply() {
    let dir = tempfile::tempdir().unwrap();
    let db = Fixture::new();
    let input = dir.path().join("hostile.jsonl");
    let mut file = std::fs::File::create(&input).unwrap();
    file.write_all(&std::fs::read(CORPUS).unwrap()).unwrap();
    // Line 22: a 3 MiB id, far past the line limit; line 23: valid again.
    for id in ["x".repeat(3 << 20), "h-23".to_owned()] {
        let line = serde_json::json!({
            "id": id,
            "type": "payment.captured",
            "payload": { "account": 1, "amount": 1 },
        });
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    assert!(
        run_consumer(&db, &["open-account", "1", "1000"])
            .status
            .success()
    );

    let output = run_consumer(&db, &["run", input.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Valid: lines 1, 13, 20, 21 (a duplicate of line 1) and 23; two consumers each.
    assert_eq!(
        stdout.trim(),
        "applied=8 duplicate=2 failed=0 rejected=18 dead_lettered=0 refused=0"
    );
    let rejects: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(": rejected: "))
        .collect();
    assert_eq!(rejects.len(), EXPECTED_REJECTS.len(), "{stderr}");
    for (reject, (line, reason)) in rejects.iter().zip(EXPECTED_REJECTS) {
        let expected = format!("line {line}: rejected: {reason}");
        assert!(
            reject.starts_with(&expected),
            "got {reject:?}, expected {expected:?}"
        );
    }
    let status = run_consumer(&db, &["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("account 1 balance=959"),
        "1000 - 10 - 20 - 10 - 1: {status}"
    );
}

#[test]
fn an_empty_input_is_a_clean_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = Fixture::new();
    let input = dir.path().join("empty.jsonl");
    std::fs::write(&input, "").unwrap();
    let output = run_consumer(&db, &["run", input.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "applied=0 duplicate=0 failed=0 rejected=0 dead_lettered=0 refused=0"
    );
}

/// A command line the run cannot honour is refused before anything is
/// read: exit code 2 and clap's message, nothing applied.
#[test]
fn options_the_run_cannot_honour_are_usage_errors_and_nothing_applies() {
    let db = Fixture::new();
    for (args, says) in [
        (
            &["run", "--consumer", "nope", CORPUS][..],
            "unknown consumer `nope`",
        ),
        (
            &["run", "--workers", "0", CORPUS][..],
            "invalid value '0' for '--workers <WORKERS>'",
        ),
    ] {
        let output = run_consumer(&db, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(says),
            "{args:?} should say {says:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?} printed a summary");
    }
    for consumer in ["debit", "notify", "refund"] {
        assert_eq!(db.inbox_rows(consumer), 0, "{consumer} applied something");
    }
}

#[test]
fn rejects_can_go_to_a_file_with_their_original_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = Fixture::new();
    let rejects = dir.path().join("rejects.jsonl");
    assert!(
        run_consumer(&db, &["open-account", "1", "1000"])
            .status
            .success()
    );
    let output = run_consumer(
        &db,
        &["run", CORPUS, "--rejects", rejects.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(3));
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&rejects)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 17);
    assert_eq!(records[0]["line"], 2);
    assert!(
        records[0]["text"]
            .as_str()
            .unwrap()
            .starts_with(r#"{"id": "h-02""#)
    );
}
