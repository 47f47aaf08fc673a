//! Every variant of a generated project, with the kit's own suites added
//! (`template/kit-suites/`: they test the kit's code through the example consumers),
//! builds from its own lock file without warnings, passes clippy with
//! warnings denied, is formatted, and passes its tests against the local
//! servers the variant needs (the suites of the database and the inbox
//! once per database: see [`ONCE_PER_DATABASE`]). A variant whose server is unreachable still
//! builds, lints and is checked for formatting, and is reported as
//! `ignored (NOT RUN: ...)`, never as passed (see `common/trials.rs`).

mod common;

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use common::trials::Trials;
use common::{POSTGRES, SQLITE, VARIANTS, Variant, cargo, cargo_ok, generate, generate_with};

fn main() -> ExitCode {
    let mut trials = Trials::default();
    for variant in VARIANTS {
        let name = format!(
            "the_{}_variant_builds_lints_formats_and_passes_its_tests",
            variant.name.replace('-', "_")
        );
        // A name per variant: projects share one target directory, where
        // a binary is found by its package name alone.
        // The kit's own suites added: this is where they run, once per
        // variant (`template/kit-suites/`).
        let project = move || {
            generate_with(
                &format!("{}-consumer", variant.name),
                variant.defines,
                &["--kit-suites"],
            )
        };
        trials = trials.needs(
            variant,
            &name,
            move || {
                builds_lints_and_is_formatted(&project().root);
            },
            move || {
                let project = project();
                builds_lints_and_is_formatted(&project.root);
                let command = test_command(variant, &project.root);
                let args: Vec<&str> = command.iter().map(String::as_str).collect();
                cargo_ok(&project.root, &args);
                // A hang in the required tests blocks the stop, on each
                // database (the brokers change nothing there).
                if [SQLITE.name, POSTGRES.name].contains(&variant.name) {
                    common::hook::assert_a_hang_blocks_the_stop(&project.root);
                }
            },
        );
    }
    trials
        .test(
            "template_sources_are_formatted_as_written",
            template_sources_are_formatted_as_written,
        )
        .test(
            "the_first_build_leaves_the_lock_file_as_generated_whatever_the_name",
            the_first_build_leaves_the_lock_file_as_generated_whatever_the_name,
        )
        .run()
}

/// The suites that test the database and the inbox, and nothing of a
/// broker: their files, the database's module and the inbox are the same
/// with and without one, so they run once per database, in the variant
/// without a broker (the others still build and lint them).
const ONCE_PER_DATABASE: [&str; 2] = ["conformance", "reliability"];

/// `cargo test` for `variant`: every target, but a variant with a broker
/// leaves out the suites its database's own variant runs.
fn test_command(variant: &Variant, root: &Path) -> Vec<String> {
    let mut command = vec!["test".to_owned(), "--locked".to_owned()];
    if [SQLITE.name, POSTGRES.name].contains(&variant.name) {
        return command;
    }
    command.extend(["--lib".to_owned(), "--bins".to_owned()]);
    let mut suites: Vec<String> = fs::read_dir(root.join("tests"))
        .expect("the project's tests folder")
        .map(|entry| entry.expect("a tests folder entry").path())
        .filter(|path| path.join("main.rs").is_file())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    suites.sort();
    for suite in ONCE_PER_DATABASE {
        assert!(
            suites.iter().any(|found| found == suite),
            "{}: no suite `{suite}` to leave out: {suites:?}",
            variant.name
        );
    }
    for suite in suites {
        if !ONCE_PER_DATABASE.contains(&suite.as_str()) {
            command.extend(["--test".to_owned(), suite]);
        }
    }
    command
}

/// `--locked`: the template ships a lock file per variant, so a generated
/// project builds the dependency versions the kit was tested with.
fn builds_lints_and_is_formatted(root: &Path) {
    let build = cargo_ok(root, &["build", "--all-targets", "--locked"]);
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(!log.contains("warning"), "the build warned:\n{log}");
    cargo_ok(
        root,
        &[
            "clippy",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    );
    cargo_ok(root, &["fmt", "--check"]);
}

/// cargo-generate 0.23 (the CLI that builds on rustc 1.95) does not run
/// rustfmt, so the template's own sources, and the kit's suites, must
/// already be formatted, in every variant. `scripts/format-template.sh` fixes them.
fn template_sources_are_formatted_as_written() {
    for variant in VARIANTS {
        let project = generate_with(
            "orders-consumer",
            variant.defines,
            &["--no-format", "--kit-suites"],
        );
        let check = cargo(&project.root, &["fmt", "--check"]);
        assert!(
            check.status.success(),
            "{} variant: template sources need formatting (run scripts/format-template.sh):\n{}",
            variant.name,
            String::from_utf8_lossy(&check.stdout)
        );
    }
}

/// A project's first build must not rewrite its lock file (a fresh checkout
/// would show a modified file), whatever the project's name: Cargo sorts
/// the project's own entry among its dependencies.
fn the_first_build_leaves_the_lock_file_as_generated_whatever_the_name() {
    for variant in VARIANTS {
        for name in ["a-consumer", "m", "orders-consumer", "zzz-consumer"] {
            let project = generate(name, variant.defines);
            let lock = project.root.join("Cargo.lock");
            let generated = fs::read(&lock).unwrap();
            cargo_ok(
                &project.root,
                &["metadata", "--format-version", "1", "--locked"],
            );
            assert!(
                fs::read(&lock).unwrap() == generated,
                "{} variant, project {name}: cargo rewrote Cargo.lock",
                variant.name
            );
        }
    }
}
