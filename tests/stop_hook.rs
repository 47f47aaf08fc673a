//! The Stop hook, driven the way Claude Code drives it (JSON on stdin, a
//! JSON answer on stdout): it lets a green tree stop, answers a repeated
//! stop on an unchanged green tree without running cargo, and blocks each
//! way of breaking "done" (a required test, a unit test, clippy, rustfmt)
//! with every failing test's name first. It never loops forever: its own
//! per-session budget of blocks, a no-progress rule, and a switch to pause.

mod common;

use std::fs;
use std::path::Path;

use common::hook::{SQLITE_INBOX, Stop, failed_tests, hang, one_at_a_time};
use common::replay::Edit;
use common::{cargo, cargo_ok, generate};

/// Breaks the inbox the record-first way: a failed delivery keeps its inbox
/// row (and its writes), so the redelivery is dropped as a duplicate.
/// The inbox is the runtime's: the edit is to the project's vendored copy.
const BREAK_INBOX: Edit = Edit {
    path: SQLITE_INBOX,
    find: "statements.rollback_to.execute([])?;",
    replace: "// rollback removed: the failed delivery stays recorded",
};

/// Other ways an agent could leave the consumer wrong while its own tests
/// pass: each must block the stop too.
const OTHER_BREAKS: [Edit; 3] = [
    // A handler that does nothing: duplicates are "handled", nothing is
    // debited. Only the model sees it.
    Edit {
        path: "src/handlers/debit.rs",
        find: "        if !tables.debit(&debit)? {",
        replace: "        if debit.amount > 0 {\n            return Ok(());\n        }\n        if !tables.debit(&debit)? {",
    },
    // The ledger's own key dropped: a repeat past the inbox debits again.
    Edit {
        path: "src/sqlite/tables.rs",
        find: "    payment_id TEXT    PRIMARY KEY,",
        replace: "    payment_id TEXT    NOT NULL,",
    },
    // Ids folded to lower case before they are recorded.
    Edit {
        path: SQLITE_INBOX,
        find: "    match insert.execute((consumer, id, received_at)) {",
        replace: "    match insert.execute((consumer, id.to_lowercase(), received_at)) {",
    },
];

/// A unit test that fails, with a message full of characters JSON must
/// escape (the hook's answer is parsed as JSON below).
const BREAK_UNIT_TEST: Edit = Edit {
    path: "src/event.rs",
    find: r#"        let (kind, payload) = event.encode();
        assert_eq!(Event::decode(kind, &payload).unwrap(), event);
    }

    #[test]
    fn refuses_amounts_outside_the_range() {"#,
    replace: r#"        let (kind, payload) = event.encode();
        assert_ne!(Event::decode(kind, &payload).unwrap(), event, "quote \" backslash \\ tab \t bell \u{7} é ✓");
    }

    #[test]
    fn refuses_amounts_outside_the_range() {"#,
};
const UNIT_TEST: &str = "event::tests::encode_is_the_inverse_of_decode";
const TRICKY: &str = "quote \" backslash \\ tab \t bell \u{7} é ✓";

/// Code rustc accepts without a warning but clippy does not.
const CLIPPY_BAIT: &str =
    "\n#[test]\nfn clippy_bait() {\n    let v = vec![1, 2];\n    assert_eq!(v.len(), 2);\n}\n";
/// Code clippy accepts but rustfmt would rewrite.
const FORMAT_BAIT: &str = "\n#[test]\nfn   format_bait( )   {   }\n";
const BAIT_FILE: &str = "tests/conformance/main.rs";

/// Runs `change`, then the test body, then puts every file back as it was,
/// and `Cargo.toml` too: an edit to the vendored runtime points the
/// project at its vendored crates (`common::use_the_vendored_crates`).
fn with_files_restored(root: &Path, paths: &[&str], body: impl FnOnce()) {
    let saved: Vec<_> = paths
        .iter()
        .chain(&["Cargo.toml"])
        .map(|p| (root.join(p), fs::read(root.join(p)).unwrap()))
        .collect();
    body();
    for (path, bytes) in saved {
        fs::write(path, bytes).unwrap();
    }
}

fn append(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    let before = fs::read_to_string(&path).unwrap();
    fs::write(path, before + text).unwrap();
}

/// The part of a reason before the first failure's text.
fn head_of(reason: &str) -> &str {
    reason.split("\n---- ").next().unwrap()
}

#[test]
fn blocks_each_way_to_break_done_and_lets_a_green_tree_stop() {
    let _alone = one_at_a_time();
    let project = generate("hook-checks-consumer", &[]);
    let root = &project.root;

    let green = Stop::new(root, "checks").run();
    green.assert_allowed();
    for check in [
        "fmt --check",
        "clippy --all-targets -- -D warnings",
        "test --no-fail-fast --lib --bins",
        "test --no-fail-fast --test conformance",
    ] {
        assert!(
            green.cargo_calls.iter().any(|call| call == check),
            "the hook did not run `cargo {check}`: {:?}",
            green.cargo_calls
        );
    }

    // Nothing changed since that green run: answered from the cache.
    let again = Stop::new(root, "checks").run();
    again.assert_allowed();
    assert!(
        again.cargo_calls.is_empty(),
        "a repeated stop on an unchanged green tree ran cargo: {:?}",
        again.cargo_calls
    );

    // (a) A broken inbox. RUST_BACKTRACE=1 in the agent's environment must
    // not push failures out of the reason.
    with_files_restored(root, &[BREAK_INBOX.path], || {
        BREAK_INBOX.apply(root);
        let truth = cargo(root, &["test", "--no-fail-fast", "--test", "conformance"]);
        let failing = failed_tests(&String::from_utf8_lossy(&truth.stdout));
        assert!(
            failing.len() >= 2,
            "the broken inbox is not caught: {failing:?}"
        );

        let answer = Stop::new(root, "checks").env("RUST_BACKTRACE", "1").run();
        let reason = answer.reason();
        assert!(reason.starts_with("Not done: "), "{reason}");
        assert!(reason.len() <= 8_000, "reason of {} bytes", reason.len());
        assert!(!reason.contains("stack backtrace"), "{reason}");
        let head = head_of(reason);
        for name in &failing {
            assert!(
                head.contains(&format!("  - {name}  (cargo test --test conformance)")),
                "{name} is not listed before the failures:\n{reason}"
            );
        }
        // Each failure gets a share of the reason, in name order, whatever
        // order the tests finished in: one long failure hides no other.
        for name in &failing {
            assert!(
                reason.contains(&format!("---- {name} ----")),
                "the text of {name} is missing:\n{reason}"
            );
        }
        let shown: Vec<&str> = reason
            .lines()
            .filter_map(|line| line.strip_prefix("---- ")?.strip_suffix(" ----"))
            .collect();
        assert!(shown.is_sorted(), "failures not in name order: {shown:?}");
    });
    for broken in &OTHER_BREAKS {
        with_files_restored(root, &[broken.path], || {
            broken.apply(root);
            let answer = Stop::new(root, "checks").run();
            let reason = answer.reason();
            assert!(
                reason.starts_with("Not done: ")
                    && reason.contains("(cargo test --test conformance)"),
                "{} {:?} did not block on the required tests:\n{reason}",
                broken.path,
                broken.replace
            );
        });
    }
    // Back to the green tree's content: the cache knows it.
    let restored = Stop::new(root, "checks").run();
    restored.assert_allowed();
    assert!(
        restored.cargo_calls.is_empty(),
        "{:?}",
        restored.cargo_calls
    );

    // (b) A failing unit test.
    with_files_restored(root, &[BREAK_UNIT_TEST.path], || {
        BREAK_UNIT_TEST.apply(root);
        cargo_ok(root, &["fmt"]);
        let answer = Stop::new(root, "checks").run();
        let reason = answer.reason();
        assert!(
            head_of(reason).contains(&format!("  - {UNIT_TEST}  (cargo test --lib --bins)")),
            "{reason}"
        );
        assert!(
            reason.contains(TRICKY),
            "the failure's text was mangled:\n{reason}"
        );
        assert!(
            !reason.contains("clippy") && !reason.contains("fmt"),
            "{reason}"
        );
    });

    // (c) A clippy warning.
    with_files_restored(root, &[BAIT_FILE], || {
        append(root, BAIT_FILE, CLIPPY_BAIT);
        let answer = Stop::new(root, "checks").run();
        let reason = answer.reason();
        assert!(
            reason
                .starts_with("Not done: clippy fails (cargo clippy --all-targets -- -D warnings)."),
            "{reason}"
        );
        assert!(
            reason.contains("useless"),
            "clippy's diagnostic is missing:\n{reason}"
        );
    });

    // (d) Unformatted code.
    with_files_restored(root, &[BAIT_FILE], || {
        append(root, BAIT_FILE, FORMAT_BAIT);
        let answer = Stop::new(root, "checks").run();
        let reason = answer.reason();
        assert!(
            reason.starts_with("Not done: the code is not formatted (cargo fmt --check)."),
            "{reason}"
        );
        assert!(
            reason.contains(BAIT_FILE),
            "which file is not said:\n{reason}"
        );
    });
}

#[test]
fn never_blocks_forever() {
    let _alone = one_at_a_time();
    let project = generate("hook-budget-consumer", &[]);
    let root = &project.root;
    BREAK_INBOX.apply(root);
    let stop = |session, active| {
        Stop::new(root, session)
            .active(active)
            .env("STOP_HOOK_MAX_BLOCKS", "2")
            .run()
    };

    // The agent keeps changing things without fixing them. Claude Code
    // does not always set stop_hook_active: a false one must not reset the
    // session's count.
    assert!(stop("budget", false).reason().contains("block 1 of 2"));
    append(root, BAIT_FILE, "// attempt 1\n");
    assert!(stop("budget", false).reason().contains("block 2 of 2"));
    append(root, BAIT_FILE, "// attempt 2\n");
    let capped = stop("budget", false);
    assert!(capped.blocked().is_none(), "blocked past the cap");
    let message = capped.system_message().expect("a message at the cap");
    assert!(message.contains("NOT done"), "{message}");
    assert!(
        message.contains("required::redelivery"),
        "which tests fail is not said: {message}"
    );

    // Still failing and nothing changed: blocking again would not help.
    let session = "no-progress";
    let first = Stop::new(root, session).run();
    assert!(
        first.reason().contains("block 1 of 5"),
        "{}",
        first.reason()
    );
    let unchanged = Stop::new(root, session).active(true).run();
    assert!(
        unchanged.blocked().is_none(),
        "blocked with no progress possible"
    );
    let message = unchanged.system_message().expect("a message");
    assert!(
        message.contains("nothing changed since the last block") && message.contains("NOT done"),
        "{message}"
    );

    // STOP_HOOK_MAX_BLOCKS=0: a person pausing on purpose while tests fail.
    let paused = Stop::new(root, "pause")
        .env("STOP_HOOK_MAX_BLOCKS", "0")
        .run();
    assert!(paused.blocked().is_none());
    assert!(paused.system_message().unwrap().contains("NOT done"));

    // Green again: the session's count starts over.
    BREAK_INBOX.revert(root);
    stop("budget", true).assert_allowed();
    BREAK_INBOX.apply(root);
    assert!(stop("budget", false).reason().contains("block 1 of 2"));
    BREAK_INBOX.revert(root);

    never_waits_past_its_budget(root);
}

/// A hang that nothing else ends (the harness's watchdog given a day) is
/// ended by the hook's own budget: the stop is blocked, saying which check
/// ran out of time and which tests had not finished, and the tree is not
/// remembered as green.
fn never_waits_past_its_budget(root: &Path) {
    let hang = hang(root);
    common::replay::apply(root, &hang);
    // Built before, so that the budget goes to running the tests.
    cargo_ok(root, &["test", "--no-run", "--test", "conformance"]);
    let stop = |session, budget: u64| {
        let started = std::time::Instant::now();
        let answer = Stop::new(root, session)
            .env("STOP_HOOK_SKIP", "fmt clippy unit red-green")
            .env("STOP_HOOK_BUDGET_SECONDS", budget.to_string())
            .env("INBOX_TEST_HANG_SECONDS", "86400")
            .run();
        (answer, started.elapsed().as_secs())
    };
    let (answer, seconds) = stop("out-of-time", 40);
    let reason = answer.reason();
    assert!(
        seconds < 40 + 15,
        "the hook answered after {seconds} s, past its 40 s budget"
    );
    assert!(
        reason.contains("cargo test --test conformance ran out of time: stopped after")
            && reason.contains("a hang counts as a failure"),
        "{reason}"
    );
    let unfinished = reason
        .split("the tests that had not finished ==\n")
        .nth(1)
        .unwrap_or_else(|| panic!("the unfinished tests are not listed:\n{reason}"));
    assert!(
        unfinished
            .lines()
            .next()
            .is_some_and(|line| line.contains("::")),
        "{reason}"
    );
    // Not remembered as green: another session's stop runs the tests
    // again (with a shorter budget: only that it runs them matters).
    let (again, _) = stop("out-of-time-again", 25);
    assert!(
        again
            .cargo_calls
            .iter()
            .any(|call| call == "test --no-fail-fast --test conformance")
            && again.reason().contains("ran out of time"),
        "{:?}",
        again.cargo_calls
    );
    for edit in hang.iter().rev() {
        edit.revert(root);
    }
}
