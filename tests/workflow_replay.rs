//! The `/add-handler` workflow, replayed without an agent: add a new
//! consumer's harness tests with a stub handler, see them fail on their
//! expected values, add the implementation without touching the tests, see
//! everything pass.

mod common;

use std::fs;
use std::path::Path;

use common::{cargo, generate};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/loyalty");

fn fixture(name: &str) -> String {
    fs::read_to_string(Path::new(FIXTURES).join(name)).expect("fixture")
}

/// The handler with its `apply` body replaced by `Ok(())`.
fn stub(handler: &str) -> String {
    let begin = handler
        .find("        // implementation: begin")
        .expect("begin marker");
    let end_marker = "        // implementation: end\n";
    let end = handler.find(end_marker).expect("end marker") + end_marker.len();
    let params = handler[..begin].replace(
        "(&self, db: &Connection, message: &Message)",
        "(&self, _db: &Connection, _message: &Message)",
    );
    format!("{params}        Ok(())\n{}", &handler[end..])
}

fn edit(path: &Path, edit: impl FnOnce(String) -> String) {
    let text = fs::read_to_string(path).expect("file to edit");
    fs::write(path, edit(text)).expect("write edit");
}

#[test]
fn new_handler_tests_fail_against_a_stub_then_pass_with_the_implementation() {
    let project = generate("replay-consumer", &[]);
    let root = &project.root;
    let handler = fixture("handler.rs");

    // Step 2 of /add-handler: tests, subject, stub handler, registration.
    fs::write(root.join("src/handlers/loyalty.rs"), stub(&handler)).unwrap();
    edit(&root.join("src/handlers/mod.rs"), |text| {
        text.replace("mod debit;\n", "mod debit;\nmod loyalty;\n")
            .replace(
                "pub use debit::{Debit, balance, balances, open_account};\n",
                "pub use debit::{Debit, balance, balances, open_account};\npub use loyalty::{Loyalty, points};\n",
            )
            .replace("vec![Arc::new(Debit), Arc::new(Notify)]", "vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Loyalty)]")
    });
    edit(&root.join("tests/support/subjects.rs"), |text| {
        text + &fixture("subject.rs")
    });
    fs::write(
        root.join("tests/conformance/loyalty.rs"),
        fixture("test.rs"),
    )
    .unwrap();
    edit(&root.join("tests/conformance/main.rs"), |text| {
        text.replace("mod consumers;\n", "mod consumers;\nmod loyalty;\n")
    });
    let tests_before = fs::read_to_string(root.join("tests/conformance/loyalty.rs")).unwrap();

    // Step 3: they fail, on their expected values rather than on compiling.
    let failing = cargo(root, &["test", "--test", "conformance", "loyalty"]);
    let output = String::from_utf8_lossy(&failing.stdout);
    assert!(
        !failing.status.success(),
        "the new tests passed against a stub:\n{output}"
    );
    assert!(
        output.contains("test result: FAILED. 0 passed; 3 failed"),
        "expected all 3 to fail:\n{output}"
    );
    assert!(
        output.contains("50 payments of 10 give 50 points"),
        "not failing on the expected value:\n{output}"
    );

    // Step 5: the implementation, tests untouched.
    fs::write(root.join("src/handlers/loyalty.rs"), &handler).unwrap();
    let passing = cargo(root, &["test", "--test", "conformance"]);
    let output = String::from_utf8_lossy(&passing.stdout);
    assert!(
        passing.status.success(),
        "the implementation does not pass:\n{output}\n{}",
        String::from_utf8_lossy(&passing.stderr)
    );
    assert_eq!(
        fs::read_to_string(root.join("tests/conformance/loyalty.rs")).unwrap(),
        tests_before
    );

    // Step 7: the stress loop repeats the new consumer's parallel test too.
    let stress = std::process::Command::new(root.join("scripts/stress.sh"))
        .arg("2")
        .current_dir(root)
        .env("CARGO_TARGET_DIR", common::shared_target_dir())
        .env("STRESS_RUNNER", "loop")
        .env("STRESS_PROFILE", "debug")
        .output()
        .expect("run the stress loop");
    let log = String::from_utf8_lossy(&stress.stderr);
    assert!(stress.status.success(), "stress loop failed:\n{log}");
    assert!(
        log.contains("loyalty::parallel_awards_each_payment_once"),
        "the stress loop skips the new consumer's parallel test:\n{log}"
    );
}
