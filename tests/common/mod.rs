//! Helpers shared by the kit's tests: generate a project into a temporary
//! folder outside this repository, and run cargo in it with one shared
//! target directory so dependencies are compiled once for all tests.
//!
//! Give each test's project its own name: cargo does not tell two folders
//! holding one package apart, so two tests building different contents
//! under one name can each run the other's binaries.
#![allow(dead_code)]

pub mod git;
pub mod hook;
pub mod replay;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;

/// A generated project that lives as long as this value.
pub struct Generated {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

/// The root of this repository.
pub fn kit_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The kit's own binary, `inbox-kit`.
pub fn kit() -> Command {
    Command::cargo_bin("inbox-kit").expect("the kit's binary")
}

/// Generates `name` with the template's defaults plus `defines`.
pub fn generate(name: &str, defines: &[&str]) -> Generated {
    generate_with(name, defines, &[])
}

/// Like [`generate`], with extra `inbox-kit new` flags.
pub fn generate_with(name: &str, defines: &[&str], flags: &[&str]) -> Generated {
    let dir = tempfile::Builder::new()
        .prefix("inbox-kit-test-")
        .tempdir()
        .expect("temporary folder");
    let mut command = kit();
    command.args(["new", name, "--destination"]).arg(dir.path());
    for define in defines {
        command.args(["--define", define]);
    }
    command.args(flags);
    let output = command.output().expect("run inbox-kit");
    assert!(
        output.status.success(),
        "generation failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let root = dir.path().join(name);
    assert!(
        root.join("Cargo.toml").is_file(),
        "no Cargo.toml in {}",
        root.display()
    );
    Generated { _dir: dir, root }
}

/// The target directory every generated project builds into.
pub fn shared_target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated-target")
}

/// `cargo <args>` in `project`, with the shared target directory.
pub fn cargo(project: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo")
}

/// Like [`cargo`], but fails the test with cargo's output unless it succeeds.
pub fn cargo_ok(project: &Path, args: &[&str]) -> Output {
    let output = cargo(project, args);
    assert!(
        output.status.success(),
        "`cargo {}` failed in {}:\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Every file of a generated project, relative and sorted, without build
/// output.
pub fn files(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read folder") {
            let path = entry.expect("folder entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|name| name != "target") {
                    pending.push(path);
                }
            } else {
                let relative = path.strip_prefix(root).expect("inside root");
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}
