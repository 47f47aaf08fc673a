//! Every variant of a generated project builds from its own lock file
//! without warnings, passes clippy with warnings denied, is formatted, and
//! passes its own tests (against the local servers the variant needs; a
//! variant whose server is unreachable is reported as not run).

mod common;

use std::fs;

use common::{
    POSTGRES, POSTGRES_KAFKA, POSTGRES_NATS, SQLITE, SQLITE_KAFKA, SQLITE_NATS, VARIANTS, Variant,
    can_run, cargo, cargo_ok,
    generate, generate_with,
};

fn builds_lints_formats_and_passes_its_tests(variant: &Variant) {
    // A name per variant: projects share one target directory, where a
    // binary is found by its package name alone.
    let project = generate(&format!("{}-consumer", variant.name), variant.defines);
    // --locked: the template ships a lock file per variant, so a generated
    // project builds the dependency versions the kit was tested with.
    let build = cargo_ok(&project.root, &["build", "--all-targets", "--locked"]);
    let log = String::from_utf8_lossy(&build.stderr);
    assert!(!log.contains("warning"), "the build warned:\n{log}");
    cargo_ok(
        &project.root,
        &[
            "clippy",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    );
    cargo_ok(&project.root, &["fmt", "--check"]);
    if can_run(variant) {
        cargo_ok(&project.root, &["test", "--locked"]);
    }
}

#[test]
fn the_sqlite_variant_builds_lints_formats_and_passes_its_tests() {
    builds_lints_formats_and_passes_its_tests(&SQLITE);
}

#[test]
fn the_postgres_variant_builds_lints_formats_and_passes_its_tests() {
    builds_lints_formats_and_passes_its_tests(&POSTGRES);
}

#[test]
fn the_sqlite_nats_variant_builds_lints_formats_and_passes_its_tests() {
    builds_lints_formats_and_passes_its_tests(&SQLITE_NATS);
}

#[test]
fn the_postgres_nats_variant_builds_lints_formats_and_passes_its_tests() {
    builds_lints_formats_and_passes_its_tests(&POSTGRES_NATS);
}

#[test]
fn the_sqlite_kafka_variant_builds_lints_formats_and_passes_its_tests() {
    builds_lints_formats_and_passes_its_tests(&SQLITE_KAFKA);
}

#[test]
fn the_postgres_kafka_variant_builds_lints_formats_and_passes_its_tests() {
    builds_lints_formats_and_passes_its_tests(&POSTGRES_KAFKA);
}

/// cargo-generate 0.23 (the CLI that builds on rustc 1.95) does not run
/// rustfmt, so the template's own sources must already be formatted, in
/// every variant. `scripts/format-template.sh` fixes them.
#[test]
fn template_sources_are_formatted_as_written() {
    for variant in VARIANTS {
        let project = generate_with("orders-consumer", variant.defines, &["--no-format"]);
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
#[test]
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
