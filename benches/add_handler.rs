//! How long `/add-handler`'s commands take, run in the order the command
//! gives them, on a fresh default project with a target directory of its
//! own (as an agent's first session has): the machine's share of adding a
//! consumer. The files each step writes are the workflow replay's
//! (`tests/common/replay.rs`, the `reservations` consumer), so what is
//! timed is what `tests/workflow_replay.rs` checks.
//!
//! ```sh
//! cargo bench --bench add_handler                      # stress budget 5m
//! ADD_HANDLER_STRESS=90s cargo bench --bench add_handler
//! ```
//!
//! Prints one row per command with its wall-clock time, then the total.
//! A command that fails ends the run with its output: a step that cannot
//! be followed as written is a finding, not a number.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::git::Repo;
use common::replay::RESERVING;

/// The project, its own target directory, and the times so far.
struct Session<'a> {
    root: &'a Path,
    target: &'a Path,
    times: Vec<(String, Duration)>,
}

impl Session<'_> {
    /// Runs `program args` in the project, timed; exits on failure unless
    /// the step is expected to fail (the red tests).
    fn step(&mut self, step: &str, program: &str, args: &[&str], must_succeed: bool) {
        let label = format!("{step}: {program} {}", args.join(" "));
        eprintln!("add_handler: {label} ...");
        let started = Instant::now();
        let output = Command::new(program)
            .args(args)
            .current_dir(self.root)
            .env("CARGO_TARGET_DIR", self.target)
            .env("DATABASE_URL", common::database_url())
            .output()
            .expect("run a step");
        let took = started.elapsed();
        eprintln!("add_handler:   {:.1}s", took.as_secs_f64());
        if output.status.success() != must_succeed {
            eprintln!(
                "add_handler: `{label}` {} unexpectedly:\n{}\n{}",
                if must_succeed { "failed" } else { "passed" },
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            std::process::exit(1);
        }
        self.times.push((label, took));
    }

    fn cargo(&mut self, step: &str, args: &[&str]) {
        self.step(step, "cargo", args, true);
    }
}

fn main() {
    let stress = std::env::var("ADD_HANDLER_STRESS").unwrap_or_else(|_| "5m".to_owned());
    let project = common::generate("timed-consumer", &[]);
    let root = project.root.as_path();
    let repo = Repo::init(root);
    let target = tempfile::Builder::new()
        .prefix("add-handler-target-")
        .tempdir()
        .expect("a target directory");
    let consumer = &RESERVING;
    let mut session = Session {
        root,
        target: target.path(),
        times: Vec::new(),
    };
    let clippy = ["clippy", "--all-targets", "--", "-D", "warnings"];

    consumer.write_stub(root);
    session.cargo("2 stub builds", &["build"]);
    consumer.write_tests(root);
    session.cargo("3 lint the subject", &clippy);
    session.cargo("3 format", &["fmt"]);
    session.step(
        "4 the required tests fail",
        "cargo",
        consumer.red.command,
        false,
    );
    repo.commit_all("reservations: its subject, failing against a stub (expected to fail)");
    consumer.write_implementation(root);
    session.cargo("7 everything green", &["test"]);
    session.cargo("7 lint", &clippy);
    session.cargo("7 format", &["fmt"]);
    repo.commit_all("reservations: implement");
    session.step(
        "7 red before green",
        "scripts/red-before-green.sh",
        &[],
        true,
    );
    session.step("8 stress", "scripts/stress.sh", &["--for", &stress], true);

    let total: Duration = session.times.iter().map(|(_, took)| *took).sum();
    println!("| step and command | seconds |");
    println!("|---|---|");
    for (label, took) in &session.times {
        println!("| `{label}` | {:.1} |", took.as_secs_f64());
    }
    println!("| total | {:.1} |", total.as_secs_f64());
}
