//! The `/add-handler` workflow, replayed without an agent: add a new
//! consumer's harness tests with a stub handler, see them fail on their
//! expected values, add the implementation without touching the tests, see
//! everything pass. The steps live in `common::replay`, shared with the
//! red-before-green test.

mod common;

use common::replay::LOYALTY;
use common::{cargo, generate};

#[test]
fn new_handler_tests_fail_against_a_stub_then_pass_with_the_implementation() {
    let project = generate("replay-consumer", &[]);
    let root = &project.root;
    let consumer = &LOYALTY;

    // Step 2 of /add-handler: tests, subject, stub handler, registration.
    consumer.write_tests(root);
    consumer.write_stub(root);
    let tests_before = consumer.test_text(root);

    // Step 3: they fail, on their expected values rather than on compiling.
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

    // Step 5: the implementation, tests untouched.
    consumer.write_implementation(root);
    let passing = cargo(root, &["test", "--test", "conformance"]);
    let output = String::from_utf8_lossy(&passing.stdout);
    assert!(
        passing.status.success(),
        "the implementation does not pass:\n{output}\n{}",
        String::from_utf8_lossy(&passing.stderr)
    );
    assert_eq!(consumer.test_text(root), tests_before);

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
}
