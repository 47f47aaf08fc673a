//! `seed`: a consumer's own state set up from the command line, with the
//! SQL its own schema defines, all or nothing. `open-account` does it for
//! `debit`; a new consumer needs no command of its own to be run against a
//! real database.

use std::process::Output;

use crate::support::database::Fixture;

fn run(fixture: &Fixture, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut command = crate::consumer(fixture);
    command
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// A file of SQL in a folder that lives as long as the returned guard.
fn sql_file(sql: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seed.sql");
    std::fs::write(&file, sql).unwrap();
    (dir, file.to_str().unwrap().to_owned())
}

fn status(fixture: &Fixture) -> String {
    let output = run(fixture, &["status"], None);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn seed_applies_a_file_of_sql_in_one_transaction() {
    let fixture = Fixture::new();
    let (_dir, file) = sql_file(
        "INSERT INTO accounts (id, balance) VALUES (5, 700);\n\
         INSERT INTO accounts (id, balance) VALUES (6, 80);\n",
    );
    let output = run(&fixture, &["seed", &file], None);
    assert!(output.status.success(), "{output:?}");
    let listed = status(&fixture);
    assert!(listed.contains("account 5 balance=700"), "{listed}");
    assert!(listed.contains("account 6 balance=80"), "{listed}");

    // From standard input too.
    let output = run(
        &fixture,
        &["seed", "-"],
        Some("INSERT INTO accounts (id, balance) VALUES (7, 9);"),
    );
    assert!(output.status.success(), "{output:?}");
    assert!(status(&fixture).contains("account 7 balance=9"));
}

#[test]
fn a_failing_statement_leaves_nothing_behind_and_is_named() {
    let fixture = Fixture::new();
    let (_dir, file) = sql_file(
        "INSERT INTO accounts (id, balance) VALUES (8, 100);\n\
         INSERT INTO no_such_table (id) VALUES (1);\n",
    );
    let output = run(&fixture, &["seed", &file], None);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no_such_table") && stderr.contains("nothing was applied"),
        "the error should name the failing statement's problem and say nothing was applied:\n{stderr}"
    );
    assert!(
        !status(&fixture).contains("account 8"),
        "the first statement of a failed seed stayed"
    );
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let fixture = Fixture::new();
    let output = run(&fixture, &["seed", "/no/such/seed.sql"], None);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/no/such/seed.sql"), "{stderr}");
}
