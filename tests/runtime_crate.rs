//! The runtime crate (`template/vendor/inbox-kit-runtime`) is the one
//! source of the copy every generated project holds, is named by version
//! and path at once, and packages as a crate a registry could publish.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{POSTGRES, POSTGRES_KAFKA, POSTGRES_NATS, SQLITE_KAFKA, files, generate, kit_root};

fn runtime_source() -> PathBuf {
    kit_root().join("template/vendor/inbox-kit-runtime")
}

/// The runtime's version, as cargo reads its manifest.
fn runtime_version() -> String {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(kit_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|package| package["name"] == "inbox-kit-runtime")
        .expect("the runtime is a member of the kit's workspace")["version"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn every_project_holds_the_runtime_byte_for_byte_and_names_it_by_version_and_path() {
    let project = generate("runtime-copy-consumer", &[]);
    let copy = project.root.join("vendor/inbox-kit-runtime");
    let source = runtime_source();
    assert_eq!(files(&copy), files(&source), "the vendored copy's files");
    for file in files(&source) {
        assert!(
            fs::read(copy.join(&file)).unwrap() == fs::read(source.join(&file)).unwrap(),
            "vendor/inbox-kit-runtime/{file} differs from the kit's (rendered as a template?)"
        );
    }
    let manifest = fs::read_to_string(project.root.join("Cargo.toml")).unwrap();
    let dependency = format!(
        r#"inbox-kit-runtime = {{ version = "{}", path = "vendor/inbox-kit-runtime", features = ["sqlite"] }}"#,
        runtime_version()
    );
    assert!(
        manifest.lines().any(|line| line == dependency),
        "Cargo.toml should hold `{dependency}`:\n{manifest}"
    );
}

/// Each variant turns on its database's feature, and Kafka's where the
/// broker is Kafka: no more (the other database's client stays out of
/// the build), no less (the project would not compile).
#[test]
fn each_variant_turns_on_the_runtime_features_it_uses() {
    for (variant, features) in [
        (&POSTGRES, r#"["postgres"]"#),
        (&POSTGRES_NATS, r#"["postgres"]"#),
        (&SQLITE_KAFKA, r#"["sqlite", "kafka"]"#),
        (&POSTGRES_KAFKA, r#"["postgres", "kafka"]"#),
    ] {
        let project = generate(
            &format!("runtime-{}-consumer", variant.name),
            variant.defines,
        );
        let manifest = fs::read_to_string(project.root.join("Cargo.toml")).unwrap();
        let wanted = format!(r#"path = "vendor/inbox-kit-runtime", features = {features} }}"#);
        assert!(
            manifest.contains(&wanted),
            "{}: Cargo.toml should hold `{wanted}`:\n{manifest}",
            variant.name
        );
    }
}

/// What `cargo publish` would upload: the crate builds from its package
/// alone, with its dependencies from crates.io.
#[test]
fn the_runtime_packages_as_a_publishable_crate() {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("runtime-package");
    let output = Command::new(env!("CARGO"))
        .args([
            "package",
            "--package",
            "inbox-kit-runtime",
            "--allow-dirty",
            "--target-dir",
        ])
        .arg(&target)
        .current_dir(kit_root())
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo package");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo package failed:\n{log}");
    assert!(!log.contains("warning"), "cargo package warned:\n{log}");
    let version = runtime_version();
    assert!(
        target
            .join(format!("package/inbox-kit-runtime-{version}.crate"))
            .is_file(),
        "no .crate file:\n{log}"
    );
}
