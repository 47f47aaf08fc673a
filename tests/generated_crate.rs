//! A generated project builds without warnings, passes clippy with
//! warnings denied, is formatted, and its own tests pass.

mod common;

use common::{cargo, cargo_ok, generate, generate_with};

#[test]
fn builds_lints_formats_and_passes_its_tests() {
    let project = generate("orders-consumer", &[]);
    // --locked: the template ships its Cargo.lock, so a generated project
    // builds the dependency versions the kit was tested with.
    let build = cargo_ok(&project.root, &["build", "--all-targets", "--locked"]);
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(!log.contains("warning"), "the build warned:\n{log}");
    cargo_ok(
        &project.root,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    cargo_ok(&project.root, &["fmt", "--check"]);
    cargo_ok(&project.root, &["test"]);
}

/// cargo-generate 0.23 (the CLI that builds on rustc 1.95) does not run
/// rustfmt, so the template's own sources must already be formatted.
/// `scripts/format-template.sh` fixes them.
#[test]
fn template_sources_are_formatted_as_written() {
    let project = generate_with("orders-consumer", &[], &["--no-format"]);
    let check = cargo(&project.root, &["fmt", "--check"]);
    assert!(
        check.status.success(),
        "template sources need formatting (run scripts/format-template.sh):\n{}",
        String::from_utf8_lossy(&check.stdout)
    );
}
