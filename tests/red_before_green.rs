//! `scripts/red-before-green.sh` on replayed git histories of the
//! add-a-handler workflow: it accepts failing tests committed with a stub
//! and then the implementation, and rejects the implementation first or in
//! the same commit, tests weakened afterwards, and tests that were red only
//! because they did not build. The Stop hook runs it and blocks on a
//! rejection.

mod common;

use std::path::Path;
use std::process::Command;

use common::git::Repo;
use common::hook::Stop;
use common::replay::RESERVING;
use common::{cargo_ok, generate, shared_target_dir};

/// Runs the script in `root` with `args`; returns its exit code and output.
fn red_green(root: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(root.join("scripts/red-before-green.sh"))
        .args(args)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("RED_GREEN_BASE")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run red-before-green.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().expect("an exit code"), text)
}

#[test]
fn accepts_tests_seen_failing_first_and_rejects_every_other_history() {
    let project = generate("red-green-consumer", &[]);
    let root = &project.root;
    let repo = Repo::init(root);
    let consumer = &RESERVING;
    let format = || cargo_ok(root, &["fmt"]);

    assert_eq!(red_green(root, &["--bogus"]).0, 2);
    assert_eq!(red_green(root, &["no-such-commit"]).0, 2);
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to check"), "{out}");

    // The /add-handler order: failing tests with a stub, then the code.
    repo.branch("tests-first", "main");
    consumer.write_tests(root);
    consumer.write_stub(root);
    format();
    let red = repo.commit_all("reserving: failing tests against a stub");
    consumer.write_implementation(root);
    format();
    repo.commit_all("reserving: implement");
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 0, "rejected:\n{out}");
    assert!(out.contains("merge-base with main"), "{out}");
    assert!(out.contains(&format!("red commit {red}")), "{out}");
    for name in consumer.test_names {
        assert!(
            out.contains(&format!("FAILS as it should  {name}")),
            "{out}"
        );
        assert!(out.contains(&format!("PASSES  {name}")), "{out}");
    }
    assert!(
        out.contains(consumer.red.message),
        "the failing assertion is not shown:\n{out}"
    );
    assert!(out.contains("ACCEPTED"), "{out}");
    // The Stop hook runs the same check (its verdict is cached by commit).
    Stop::new(root, "red-green-accepted").run().assert_allowed();

    // A follow-up change to src/ alone (a refactor) needs no new test.
    let handler = root.join(consumer.handler.path);
    let text = std::fs::read_to_string(&handler).unwrap();
    std::fs::write(&handler, format!("{text}// tidied\n")).unwrap();
    repo.commit_all("reserving: tidy");
    let (code, out) = red_green(root, &[]);
    assert_eq!(
        code, 0,
        "a follow-up to an accepted change was rejected:\n{out}"
    );
    // An edit not yet committed is named as not checked, never judged.
    std::fs::write(&handler, format!("{text}// tidied\n// not committed\n")).unwrap();
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("NOT checked") && out.contains(consumer.handler.path),
        "an uncommitted change was not listed as not checked:\n{out}"
    );
    repo.commit_all("reserving: tidy again");

    // A change to the layout alone of a file of tests (`#[test]` and all),
    // with a change to src/: no test changed, none to prove red.
    let tests = root.join("tests/conformance/required.rs");
    let text = std::fs::read_to_string(&tests).unwrap();
    let relaid = text.replacen("#[test]\nfn parallel()", "#[test]\n\nfn parallel()", 1);
    assert_ne!(relaid, text, "nothing to lay out differently");
    std::fs::write(&tests, relaid).unwrap();
    std::fs::write(
        &handler,
        std::fs::read_to_string(&handler).unwrap() + "// again\n",
    )
    .unwrap();
    let accepted = repo.commit_all("reserving: layout");
    let (code, out) = red_green(root, &[]);
    assert_eq!(
        code, 0,
        "a layout-only change to a file of tests was rejected:\n{out}"
    );

    // A subject weakened after the implementation: the required tests
    // that play it must be seen failing again, and none does.
    consumer.weaken.apply(root);
    format();
    let weakened = repo.commit_all("reserving: fewer contended reservations");
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 1, "accepted:\n{out}");
    assert!(out.contains("REJECTED"), "{out}");
    assert!(
        out.contains(&format!("no required test fails at {weakened}")),
        "{out}"
    );

    // The implementation first, the tests after.
    repo.branch("code-first", "main");
    consumer.write_tests(root);
    consumer.write_implementation(root);
    format();
    repo.commit_paths(&["src"], "reserving: implement");
    let tests = repo.commit_all("reserving: tests");
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 1, "accepted:\n{out}");
    assert!(
        out.contains(&format!("no required test fails at {tests}")),
        "{out}"
    );
    // Everything passes, but the Stop hook blocks on the history.
    let answer = Stop::new(root, "red-green-code-first").run();
    let reason = answer.reason();
    assert!(reason.contains("red-before-green"), "{reason}");
    assert!(reason.contains(&format!("passes at {tests}")), "{reason}");
    assert!(reason.contains("Rewrite the change's history"), "{reason}");

    // Tests and implementation in one commit.
    repo.branch("together", "main");
    consumer.write_tests(root);
    consumer.write_implementation(root);
    format();
    let both = repo.commit_all("reserving");
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 1, "accepted:\n{out}");
    assert!(out.contains(&format!("passes at {both}")), "{out}");

    // Tests that were red only because they did not build.
    repo.branch("no-stub", "main");
    consumer.write_tests(root);
    format();
    let unbuilt = repo.commit_all("reserving: tests (no stub)");
    consumer.write_implementation(root);
    format();
    repo.commit_all("reserving: implement");
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 1, "accepted:\n{out}");
    assert!(
        out.contains(&format!("the tests of {unbuilt} do not build there")),
        "{out}"
    );

    // Tests that were red only because their set-up failed.
    repo.branch("set-up-panic", "main");
    std::fs::write(root.join("tests/set_up.rs"), SET_UP_PANIC).unwrap();
    let set_up = repo.commit_all("tests that cannot set up");
    std::fs::write(
        root.join("src/lib.rs"),
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap() + "// a change\n",
    )
    .unwrap();
    repo.commit_all("a change to src/");
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 1, "accepted:\n{out}");
    assert!(out.contains("FAILS as it should  judged"), "{out}");
    assert!(
        out.contains(&format!(
            "needs_a_database fails at {set_up} but not on an assertion: an unwrap()/expect() failed in the set-up"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "not_written_yet fails at {set_up} but not on an assertion: it reached todo!/unimplemented!"
        )),
        "{out}"
    );

    // Work done on main itself, in a repository with no remote: checked
    // from the root commit.
    repo.branch("main", &accepted);
    let (code, out) = red_green(root, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("(the root commit: no remote"), "{out}");
}

/// One red test for the right reason and two for wrong ones.
const SET_UP_PANIC: &str = r#"#[test]
fn judged() {
    assert_eq!(1 + 1, 3, "the expected value");
}

#[test]
fn needs_a_database() {
    let opened: Result<u32, String> = Err("no database".to_string());
    let db = opened.expect("open the database");
    assert_eq!(db, 1);
}

#[test]
fn not_written_yet() {
    todo!()
}
"#;
