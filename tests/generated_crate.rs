//! A generated project builds without warnings, passes clippy with
//! warnings denied, is formatted, and its own tests pass.

mod common;

use common::{cargo_ok, generate};

#[test]
fn builds_lints_formats_and_passes_its_tests() {
    let project = generate("orders-consumer", &[]);
    let build = cargo_ok(&project.root, &["build", "--all-targets"]);
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(!log.contains("warning"), "the build warned:\n{log}");
    cargo_ok(
        &project.root,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
    );
    cargo_ok(&project.root, &["fmt", "--check"]);
    cargo_ok(&project.root, &["test"]);
}
