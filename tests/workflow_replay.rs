//! The `/add-handler` workflow, replayed without an agent, step by step as
//! the command gives them, for a consumer with a business id in its
//! payload, a rule across messages and messages it must refuse: a new
//! event and a stub consumer that stores nothing, its subject, seen failing
//! the required tests on their expected values, the implementation without
//! touching the subject, everything green, the stress loop repeating the
//! required parallel test for the new consumer. Then each wrong version of the consumer, to show which
//! required test stops it, on SQLite and (where the server is reachable)
//! on PostgreSQL. The steps live in `common::replay`, shared with the
//! red-before-green test.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use common::replay::{Consumer, RESERVING, database_of, failing_with};
use common::trials::Trials;
use common::{POSTGRES, cargo, cargo_ok, generate};

/// Steps 2 to 7 on the project at `root`: red, then green.
fn red_then_green(root: &Path, consumer: &Consumer) {
    // Step 2: the event and a stub consumer; it builds.
    consumer.write_stub(root);
    cargo_ok(root, &["build"]);

    // Step 3: the subject, linted and formatted before the red commit.
    consumer.write_tests(root);
    cargo_ok(root, &["clippy", "--all-targets", "--", "-D", "warnings"]);
    cargo_ok(root, &["fmt"]);
    let tests_before = consumer.test_text(root);

    // Step 4: the required tests fail for the new consumer, on their
    // expected values rather than on compiling.
    let failing = cargo(root, consumer.red.command);
    let output = String::from_utf8_lossy(&failing.stdout);
    assert!(
        !failing.status.success(),
        "the required tests passed against a stub:\n{output}"
    );
    assert!(
        output.contains(consumer.red.summary),
        "expected these to fail ({:?}):\n{output}",
        consumer.test_names
    );
    for name in consumer.test_names {
        assert!(
            output.contains(&format!("test {name} ... FAILED")),
            "{name} passed against a stub:\n{output}"
        );
    }
    assert!(
        output.contains(consumer.red.message),
        "not failing on the expected value:\n{output}"
    );
    assert!(
        output.contains("consumer `reservations`"),
        "the required tests do not name the new consumer:\n{output}"
    );

    // Steps 6 and 7: the implementation, the subject untouched; green.
    consumer.write_implementation(root);
    cargo_ok(root, &["fmt"]);
    cargo_ok(root, &["test", "--test", "conformance"]);
    assert_eq!(consumer.test_text(root), tests_before);
}

/// Each wrong version is stopped by (at least) the tests expected on this
/// project's database; a version that is right there fails none.
fn every_wrong_version_is_stopped(root: &Path, consumer: &Consumer) {
    let database = database_of(root);
    for wrong in consumer.wrong {
        let (edits, stopped_by) = wrong.on(database);
        let (failed, output) = failing_with(root, edits);
        let expected: BTreeSet<String> = stopped_by.iter().map(|t| t.to_string()).collect();
        let stopped = if expected.is_empty() {
            failed.is_empty()
        } else {
            failed.is_superset(&expected)
        };
        assert!(
            stopped,
            "{database}, {}: expected {expected:?} to fail (and nothing if that is empty), \
             got {failed:?}:\n{output}",
            wrong.name
        );
        println!("{database}, {}: stopped by {failed:?}", wrong.name);
    }
}

fn the_add_handler_steps_go_red_then_green_and_every_wrong_version_is_stopped() {
    let project = generate("replay-consumer", &[]);
    let root = &project.root;
    let consumer = &RESERVING;
    red_then_green(root, consumer);
    cargo_ok(root, &["test"]);
    cargo_ok(root, &["clippy", "--all-targets", "--", "-D", "warnings"]);

    // Step 8: the stress loop repeats the parallel test, the new consumer's
    // round included.
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

    the_new_consumer_runs_on_a_seeded_database(root);
    every_wrong_version_is_stopped(root, consumer);
}

/// The set-up the new event's documentation gives (the README sends a
/// reader to `src/event.rs`), followed: the new consumer's stock seeded
/// from the command line, then a reservation run against it applies (and
/// one beyond the stock is refused).
fn the_new_consumer_runs_on_a_seeded_database(root: &Path) {
    let events = std::fs::read_to_string(root.join("src/event.rs")).unwrap();
    let documented = "INSERT INTO stock (sku, available) VALUES ('a', 10);\" | cargo run -- seed -";
    assert!(
        events.contains(documented),
        "src/event.rs: the new event does not say how to seed its stock"
    );
    let consumer = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = std::process::Command::new("cargo")
            .args(["run", "-q", "--"])
            .args(["--db", "seeded.db"])
            .args(args)
            .current_dir(root)
            .env("CARGO_TARGET_DIR", common::shared_target_dir())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cargo run");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let seeded = consumer(
        &["seed", "-"],
        "INSERT INTO stock (sku, available) VALUES ('a', 10);",
    );
    assert!(seeded.status.success(), "seed: {seeded:?}");
    let run = consumer(
        &["run", "-"],
        concat!(
            r#"{"id": "rsv-1", "type": "stock.reserved", "payload": {"reservation_id": "r-1", "sku": "a", "quantity": 7}}"#,
            "\n",
            r#"{"id": "rsv-2", "type": "stock.reserved", "payload": {"reservation_id": "r-2", "sku": "a", "quantity": 4}}"#,
            "\n",
        ),
    );
    let summary = String::from_utf8_lossy(&run.stdout);
    assert!(
        summary.contains("applied=1 ") && summary.contains("refused=1"),
        "a seeded reservation should apply and one beyond the stock be refused: {run:?}"
    );
    std::fs::remove_file(root.join("seeded.db")).ok();
}

/// The same consumer on PostgreSQL, where a rule checked with a plain read
/// is wrong: two workers read the same stock before either writes.
fn on_postgres_a_rule_checked_with_a_plain_read_is_stopped_too() {
    let project = generate("replay-pg-consumer", POSTGRES.defines);
    let root = &project.root;
    red_then_green(root, &RESERVING);
    every_wrong_version_is_stopped(root, &RESERVING);
}

fn main() -> ExitCode {
    Trials::default()
        .test(
            "the_add_handler_steps_go_red_then_green_and_every_wrong_version_is_stopped",
            the_add_handler_steps_go_red_then_green_and_every_wrong_version_is_stopped,
        )
        .needs(
            &POSTGRES,
            "on_postgres_a_rule_checked_with_a_plain_read_is_stopped_too",
            || {},
            on_postgres_a_rule_checked_with_a_plain_read_is_stopped_too,
        )
        .run()
}
