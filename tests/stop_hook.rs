//! The Stop hook, driven the way Claude Code drives it (JSON on stdin): it
//! lets a stop through while the required tests pass, blocks it (exit 2,
//! the failing tests on stderr) when a known-broken inbox is swapped in,
//! gives up at its retry cap, and lets the stop through again once the
//! inbox is restored.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{generate, shared_target_dir};

fn stop(project: &Path, stop_hook_active: bool) -> Output {
    let mut hook = Command::new(project.join("scripts/stop-hook.sh"))
        .current_dir(project)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .env("STOP_HOOK_MAX_BLOCKS", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the hook");
    let input = format!(
        r#"{{"session_id": "kit-test", "transcript_path": "/dev/null", "hook_event_name": "Stop", "stop_hook_active": {stop_hook_active}}}"#
    );
    hook.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    hook.wait_with_output().expect("hook output")
}

/// Breaks the inbox the record-first way: a failed delivery keeps its inbox
/// row (and its writes), so the redelivery is dropped as a duplicate.
const CORRECT: &str = "statements.rollback_to.execute([])?;";
const BROKEN: &str = "// rollback removed: the failed delivery stays recorded";

#[test]
fn the_stop_hook_blocks_while_a_required_test_fails() {
    let project = generate("hooked-consumer", &[]);
    let root = &project.root;
    let inbox = root.join("src/inbox/sqlite.rs");
    let correct = std::fs::read_to_string(&inbox).unwrap();
    assert!(
        correct.contains(CORRECT),
        "the inbox no longer rolls back this way"
    );

    let green = stop(root, false);
    assert_eq!(
        green.status.code(),
        Some(0),
        "blocked while green:\n{}",
        String::from_utf8_lossy(&green.stderr)
    );

    std::fs::write(&inbox, correct.replace(CORRECT, BROKEN)).unwrap();
    let blocked = stop(root, false);
    let stderr = String::from_utf8_lossy(&blocked.stderr);
    assert_eq!(blocked.status.code(), Some(2), "not blocked:\n{stderr}");
    assert!(stderr.contains("The required inbox tests fail"), "{stderr}");
    assert!(
        stderr.contains("redeliver"),
        "the failing test's output is missing:\n{stderr}"
    );

    // The agent keeps working but does not fix it: one more block, then the
    // cap (2) lets it stop so the hook can never loop forever.
    assert_eq!(stop(root, true).status.code(), Some(2));
    let capped = stop(root, true);
    assert_eq!(
        capped.status.code(),
        Some(0),
        "the retry cap did not let the stop through"
    );
    assert!(String::from_utf8_lossy(&capped.stderr).contains("NOT done"));

    std::fs::write(&inbox, correct).unwrap();
    let restored = stop(root, true);
    assert_eq!(
        restored.status.code(),
        Some(0),
        "still blocked after the fix"
    );
}
