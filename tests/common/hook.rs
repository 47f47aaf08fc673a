//! Drives a Stop hook the way Claude Code does: JSON on stdin, the answer
//! on stdout. Every answer must be exit 0 with nothing or one JSON object
//! on stdout (checked here with a real JSON parser). `cargo` is reached
//! through a wrapper that logs each call, so a test can tell whether the
//! hook ran cargo at all.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::replay::{Edit, database_of};

/// One stop.
pub struct Stop<'a> {
    /// The hook script.
    pub script: PathBuf,
    /// The project the hook judges.
    pub project: &'a Path,
    pub session: &'a str,
    pub stop_hook_active: bool,
    /// Extra environment, e.g. `("STOP_HOOK_MAX_BLOCKS", "2")`.
    pub env: Vec<(&'a str, String)>,
    /// Set CLAUDE_PROJECT_DIR, as Claude Code does for a plugin's hook.
    pub claude_project_dir: bool,
    /// Build in the project's own `target/` instead of the shared one.
    pub own_target: bool,
}

/// What the hook answered.
#[derive(Debug)]
pub struct Answer {
    pub stdout: String,
    pub stderr: String,
    pub json: Option<Value>,
    /// The arguments of every cargo command the hook ran.
    pub cargo_calls: Vec<String>,
}

impl<'a> Stop<'a> {
    /// A stop in `project` with its own `scripts/stop-hook.sh`.
    pub fn new(project: &'a Path, session: &'a str) -> Self {
        Self {
            script: project.join("scripts/stop-hook.sh"),
            project,
            session,
            stop_hook_active: false,
            env: Vec::new(),
            claude_project_dir: false,
            own_target: false,
        }
    }

    pub fn active(mut self, active: bool) -> Self {
        self.stop_hook_active = active;
        self
    }

    pub fn env(mut self, key: &'a str, value: impl Into<String>) -> Self {
        self.env.push((key, value.into()));
        self
    }

    pub fn run(&self) -> Answer {
        let bin = tempfile::tempdir().expect("folder for the cargo wrapper");
        let calls = bin.path().join("calls");
        let wrapper = bin.path().join("cargo");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'{}'\nexec '{}' \"$@\"\n",
                calls.display(),
                env!("CARGO")
            ),
        )
        .unwrap();
        make_executable(&wrapper);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin.path().to_path_buf()];
        paths.extend(std::env::split_paths(&path));

        let mut command = Command::new(&self.script);
        command
            .current_dir(self.project)
            .env("PATH", std::env::join_paths(paths).unwrap())
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("RUST_BACKTRACE")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("RED_GREEN_BASE")
            .env_remove("STOP_HOOK_MAX_BLOCKS")
            .env_remove("STOP_HOOK_REQUIRED_TESTS")
            .env_remove("STOP_HOOK_REASON_BYTES");
        if !self.own_target {
            command.env("CARGO_TARGET_DIR", super::shared_target_dir());
        }
        if self.claude_project_dir {
            command.env("CLAUDE_PROJECT_DIR", self.project);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let mut hook = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the hook");
        // What Claude Code sends on a stop (other fields are ignored).
        let input = serde_json::json!({
            "session_id": self.session,
            "transcript_path": "/dev/null",
            "cwd": self.project,
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": self.stop_hook_active,
            "last_assistant_message": "Done: \"session_id\": \"not-this-one\", \"stop_hook_active\": true",
        });
        hook.stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let output = hook.wait_with_output().expect("hook output");
        let stdout = String::from_utf8(output.stdout).expect("the hook's answer is UTF-8");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(
            output.status.code(),
            Some(0),
            "the hook must always exit 0 (its answer is on stdout):\n{stdout}\n{stderr}"
        );
        let json = if stdout.trim().is_empty() {
            None
        } else {
            let value: Value = serde_json::from_str(&stdout)
                .unwrap_or_else(|e| panic!("the hook's answer is not JSON ({e}):\n{stdout}"));
            assert!(value.is_object(), "the answer is not an object: {stdout}");
            Some(value)
        };
        let cargo_calls = std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        Answer {
            stdout,
            stderr,
            json,
            cargo_calls,
        }
    }
}

impl Answer {
    /// The reason handed to the agent, if the stop was blocked.
    pub fn blocked(&self) -> Option<&str> {
        let json = self.json.as_ref()?;
        if json.get("decision")?.as_str()? != "block" {
            return None;
        }
        Some(
            json.get("reason")
                .and_then(Value::as_str)
                .expect("a block carries a reason"),
        )
    }

    /// The message for the person, if any.
    pub fn system_message(&self) -> Option<&str> {
        self.json.as_ref()?.get("systemMessage")?.as_str()
    }

    /// The reason, or a test failure saying the stop was let through.
    pub fn reason(&self) -> &str {
        self.blocked()
            .unwrap_or_else(|| panic!("the stop was let through:\n{self:#?}"))
    }

    /// Fails the test unless the stop was let through.
    pub fn assert_allowed(&self) {
        assert!(
            self.blocked().is_none(),
            "the stop was blocked:\n{}",
            self.blocked().unwrap()
        );
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Held for the whole of a test that runs a generated project's suite
/// through the hook: two at once on 2 cores starve the parallel scenario
/// that the generated teeth tests need to catch check-then-act, and its
/// rare miss would be blocked, rightly, as a failing required test.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The names of the tests a libtest run reported as failed.
pub fn failed_tests(libtest_output: &str) -> Vec<String> {
    libtest_output
        .lines()
        .filter_map(|line| line.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
        .map(str::to_string)
        .collect()
}

/// An edit of `$path` that makes `$line` wait first for a signal that
/// never comes.
macro_rules! wait_forever_before {
    ($path:literal, $line:literal) => {
        Edit {
            path: $path,
            find: $line,
            replace: concat!(
                "        let (_go, signal) = std::sync::mpsc::channel::<()>();\n",
                "        let _ = signal.recv();\n",
                $line
            ),
        }
    };
}

/// A consumer that hangs on SQLite (see [`hang`]).
const HANG_SQLITE: [Edit; 2] = [
    wait_forever_before!(
        "src/sqlite/mod.rs",
        "        handler.apply(&mut SqliteTables::new(db), message)\n"
    ),
    wait_forever_before!(
        "src/sqlite/mod.rs",
        "        let tables = &mut SqliteTables::new(db);\n"
    ),
];

/// A consumer that hangs on PostgreSQL (see [`hang`]).
const HANG_POSTGRES: [Edit; 2] = [
    wait_forever_before!(
        "src/postgres/mod.rs",
        "        handler.apply(&mut PgTables::new(tx, statements), message)\n"
    ),
    wait_forever_before!(
        "src/postgres/mod.rs",
        "        let tables = &mut PgTables::new(tx, statements);\n"
    ),
];

/// A consumer that hangs: every delivery the inbox hands to a handler,
/// one at a time or in a set-based run, waits inside its transaction for a
/// signal that never comes. The edits are to where the project hands the
/// runtime's inbox its tables (`src/<database>/mod.rs`), so a handler
/// called directly (a test of its tables) does not hang.
pub fn hang(root: &Path) -> Vec<Edit> {
    if database_of(root) == "sqlite" {
        HANG_SQLITE.to_vec()
    } else {
        HANG_POSTGRES.to_vec()
    }
}

/// The SQLite inbox, in the project's vendored copy of the runtime.
pub const SQLITE_INBOX: &str = "vendor/inbox-kit-runtime/src/sqlite/inbox.rs";

/// The PostgreSQL inbox, in the project's vendored copy of the runtime.
const POSTGRES_INBOX: &str = "vendor/inbox-kit-runtime/src/postgres/inbox.rs";

/// A consumer that hangs on SQLite: every batch's claims are written again
/// on a second connection, which waits without limit for the write lock
/// the batch's own transaction holds.
const CLAIM_ON_A_SECOND_CONNECTION_SQLITE: Edit = Edit {
    path: SQLITE_INBOX,
    find: "            .transaction_with_behavior(TransactionBehavior::Immediate)?;\n",
    replace: "            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let second = Connection::open(tx.path().unwrap_or_default())?;
        second.busy_timeout(std::time::Duration::from_millis(i32::MAX as u64))?;
        for delivery in batch {
            second.execute(
                \"INSERT OR IGNORE INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, 0)\",
                (delivery.handler.consumer(), delivery.message.id.as_str()),
            )?;
        }
",
};

/// The same on PostgreSQL: the second connection (without a lock timeout)
/// waits for the rows the batch's claim holds.
const CLAIM_ON_A_SECOND_CONNECTION_POSTGRES: [Edit; 2] = [
    Edit {
        path: POSTGRES_INBOX,
        find: "    fn try_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {\n",
        replace: "    fn try_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        let mut second = self.database.inbox_connection()?;
        second.batch_execute(\"SET lock_timeout = 0; SET statement_timeout = 0\")?;
",
    },
    Edit {
        path: POSTGRES_INBOX,
        find: "        let committed = BatchTx::claim(client, statements, batch, policy)\n",
        replace: "        let committed = BatchTx::claim(client, statements, batch, policy)
            .and_then(|work| {
                for delivery in batch {
                    second.execute(
                        \"INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING\",
                        &[&delivery.handler.consumer(), &delivery.message.id.as_str()],
                    )?;
                }
                Ok(work)
            })
",
    },
];

/// The consumers of the required tests' blocking teeth, written into the
/// project's own inbox: a worker waiting for a signal that never comes,
/// and a claim on a second connection waiting for its own transaction's
/// lock (in this project's database).
pub fn hanging_consumers(root: &Path) -> Vec<(&'static str, Vec<Edit>)> {
    // The vendored runtime holds both databases' inboxes: the project's
    // own database module says which one it builds.
    let second = if database_of(root) == "sqlite" {
        vec![CLAIM_ON_A_SECOND_CONNECTION_SQLITE]
    } else {
        CLAIM_ON_A_SECOND_CONNECTION_POSTGRES.to_vec()
    };
    vec![
        ("a worker waiting for a signal", hang(root)),
        ("a claim on a second connection", second),
    ]
}

/// With each of [`hanging_consumers`] in place, the project's Stop hook
/// blocks, well within its timeout, naming the hung test and its scenario:
/// the required tests fail a hang themselves (the harness's watchdog, here
/// with a limit of 5 s to keep the kit's own tests short). Only the
/// required tests are run: the other checks are not about hangs. The
/// project is put back.
pub fn assert_a_hang_blocks_the_stop(root: &Path) {
    for (consumer, edits) in hanging_consumers(root) {
        super::replay::apply(root, &edits);
        let started = std::time::Instant::now();
        let answer = Stop::new(root, "hang")
            .env("STOP_HOOK_SKIP", "fmt clippy unit red-green")
            .env("INBOX_TEST_HANG_SECONDS", "5")
            .run();
        let seconds = started.elapsed().as_secs();
        for edit in edits.iter().rev() {
            edit.revert(root);
        }
        let reason = answer
            .blocked()
            .unwrap_or_else(|| panic!("{consumer}: the hang did not block the stop:\n{answer:#?}"));
        assert!(
            reason.contains("hung: a hang counts as a failure")
                && reason.contains("Scenario: ")
                && reason.contains("(cargo test --test conformance)"),
            "{consumer}: the hang did not block the stop as a failing required test:\n{reason}"
        );
        assert!(
            seconds < 300,
            "{consumer}: the hook took {seconds} s to block a hang (Claude Code gives it 600)"
        );
    }
}
