//! The generated consumer's `run` on its sample file: duplicates counted,
//! bad lines rejected with their line numbers, balances right, and the
//! exit code reporting the rejects. A second run is all duplicates.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{cargo_ok, generate, shared_target_dir};

fn consumer(binary: &Path, db: &Path, args: &[&str], cwd: &Path) -> Output {
    Command::new(binary)
        .arg("--db")
        .arg(db)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run the consumer")
}

fn text(output: &Output) -> String {
    format!(
        "exit: {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn sample_run_counts_duplicates_rejects_bad_lines_and_debits_once() {
    let project = generate("sample-consumer", &[]);
    cargo_ok(&project.root, &["build"]);
    let binary: PathBuf = shared_target_dir().join("debug/sample-consumer");
    let db = project.root.join("sample.db");
    let root = &project.root;

    assert!(
        consumer(&binary, &db, &["open-account", "1", "1000"], root)
            .status
            .success()
    );
    assert!(
        consumer(&binary, &db, &["open-account", "2", "500"], root)
            .status
            .success()
    );

    let first = consumer(&binary, &db, &["run", "samples/deliveries.jsonl"], root);
    insta::assert_snapshot!("first_run", text(&first));
    let again = consumer(&binary, &db, &["run", "samples/deliveries.jsonl"], root);
    insta::assert_snapshot!("second_run", text(&again));
    let status = consumer(&binary, &db, &["status"], root);
    insta::assert_snapshot!("status", text(&status));
}
