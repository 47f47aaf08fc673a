//! The `/add-handler` workflow, replayed without an agent, step by step as
//! the command gives them: a new event and a stub consumer, the harness
//! tests, seen failing on their expected values, the implementation
//! without touching the tests, the docs, everything green, the stress loop
//! repeating the new parallel test. Then each wrong key of the consumer's
//! table, to show which required test stops it. The steps live in
//! `common::replay`, shared with the red-before-green test.

mod common;

use std::collections::BTreeSet;

use common::replay::PICKING;
use common::{cargo, cargo_ok, generate};

/// Names of the tests that failed in a `cargo test` run's output.
fn failed_tests(output: &str) -> BTreeSet<String> {
    output
        .lines()
        .filter_map(|line| line.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_add_handler_steps_go_red_then_green_and_every_wrong_key_is_stopped() {
    let project = generate("replay-consumer", &[]);
    let root = &project.root;
    let consumer = &PICKING;

    // Step 2: the event and a stub consumer; it builds.
    consumer.write_stub(root);
    cargo_ok(root, &["build"]);

    // Step 3: the subject and the tests.
    consumer.write_tests(root);
    let tests_before = consumer.test_text(root);

    // Step 4: they fail, on their expected values rather than on compiling.
    let failing = cargo(root, consumer.red.command);
    let output = String::from_utf8_lossy(&failing.stdout);
    assert!(
        !failing.status.success(),
        "the new tests passed against a stub:\n{output}"
    );
    assert!(
        output.contains(consumer.red.summary),
        "expected all of them to fail:\n{output}"
    );
    assert!(
        output.contains(consumer.red.message),
        "not failing on the expected value:\n{output}"
    );
    let coverage = cargo(root, &["test", "--test", "conformance", "coverage"]);
    let coverage = String::from_utf8_lossy(&coverage.stdout);
    assert!(
        coverage.contains("consumer `picking`"),
        "the coverage test does not name the new consumer:\n{coverage}"
    );

    // Steps 6 to 8: the implementation and the docs, tests untouched; green.
    consumer.write_implementation(root);
    consumer.write_docs(root);
    cargo_ok(root, &["fmt"]);
    cargo_ok(root, &["test"]);
    cargo_ok(root, &["clippy", "--all-targets", "--", "-D", "warnings"]);
    assert_eq!(consumer.test_text(root), tests_before);

    // Step 9: the stress loop repeats the new consumer's parallel test too.
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
    let parallel: Vec<_> = consumer
        .test_names
        .iter()
        .filter(|name| name.contains("::parallel"))
        .collect();
    assert!(!parallel.is_empty(), "the consumer has no parallel test");
    for name in parallel {
        assert!(
            log.contains(name),
            "the stress loop skips the new consumer's parallel test {name}:\n{log}"
        );
    }

    // Each wrong key of the consumer's table is stopped by the required
    // tests, and by exactly the ones expected.
    for wrong in consumer.wrong_keys {
        wrong.edit.apply(root);
        let run = cargo(root, &["test", "--test", "conformance"]);
        let output = String::from_utf8_lossy(&run.stdout);
        let expected: BTreeSet<String> = wrong.stopped_by.iter().map(|t| t.to_string()).collect();
        assert_eq!(
            failed_tests(&output),
            expected,
            "{}: not stopped by the expected tests:\n{output}",
            wrong.name
        );
        println!("{}: stopped by {expected:?}", wrong.name);
        wrong.edit.revert(root);
    }
}
