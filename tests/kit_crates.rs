//! The kit's crates, the runtime (`template/vendor/inbox-kit-runtime`) and
//! the test kit (`template/vendor/inbox-kit-testkit`): each is the one
//! source of the copy every generated project holds, is named by version
//! and path at once (the test kit as a dev-dependency), and packages as a
//! crate a registry could publish.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{
    POSTGRES, POSTGRES_KAFKA, POSTGRES_NATS, SQLITE_KAFKA, SQLITE_NATS, files, generate_as_shipped,
    kit_root,
};

/// The kit's crates that every project holds, with the section of its
/// `Cargo.toml` that names each.
const CRATES: [(&str, &str); 2] = [
    ("inbox-kit-runtime", "[dependencies]"),
    ("inbox-kit-testkit", "[dev-dependencies]"),
];

fn source(name: &str) -> PathBuf {
    kit_root().join("template/vendor").join(name)
}

/// A kit crate's version, as cargo reads its manifest.
fn version(name: &str) -> String {
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
        .find(|package| package["name"] == name)
        .unwrap_or_else(|| panic!("{name} is a member of the kit's workspace"))["version"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn every_project_holds_the_kits_crates_byte_for_byte_and_names_them_by_version_and_path() {
    let project = generate_as_shipped("kit-crates-copy-consumer", &[], &[]);
    let manifest = fs::read_to_string(project.root.join("Cargo.toml")).unwrap();
    for (name, section) in CRATES {
        let copy = project.root.join("vendor").join(name);
        let source = source(name);
        assert_eq!(
            files(&copy),
            files(&source),
            "{name}: the vendored copy's files"
        );
        for file in files(&source) {
            assert!(
                fs::read(copy.join(&file)).unwrap() == fs::read(source.join(&file)).unwrap(),
                "vendor/{name}/{file} differs from the kit's (rendered as a template?)"
            );
        }
        let features = match name {
            "inbox-kit-runtime" => r#", features = ["cli", "sqlite"]"#,
            "inbox-kit-testkit" => r#", features = ["sqlite"]"#,
            _ => "",
        };
        let dependency = format!(
            r#"{name} = {{ version = "{}", path = "vendor/{name}"{features} }}"#,
            version(name)
        );
        assert_eq!(
            section_of(&manifest, &dependency),
            Some(section),
            "Cargo.toml should hold `{dependency}` under {section}:\n{manifest}"
        );
    }
}

/// The `[section]` that `line` stands in, if `manifest` holds it.
fn section_of<'a>(manifest: &'a str, line: &str) -> Option<&'a str> {
    let mut section = None;
    for text in manifest.lines() {
        if text.starts_with('[') {
            section = Some(text);
        } else if text == line {
            return section;
        }
    }
    None
}

/// Each variant turns on the command line's parts, its database's feature
/// and its broker's (whose source the runtime holds): no more (the other
/// database's and brokers' clients stay out of the build), no less (the
/// project would not compile).
#[test]
fn each_variant_turns_on_the_runtime_features_it_uses() {
    for (variant, features) in [
        (&POSTGRES, r#"["cli", "postgres"]"#),
        (&POSTGRES_NATS, r#"["cli", "postgres", "nats"]"#),
        (&SQLITE_NATS, r#"["cli", "sqlite", "nats"]"#),
        (&SQLITE_KAFKA, r#"["cli", "sqlite", "kafka"]"#),
        (&POSTGRES_KAFKA, r#"["cli", "postgres", "kafka"]"#),
    ] {
        let project = generate_as_shipped(
            &format!("kit-crates-{}-consumer", variant.name),
            variant.defines,
            &[],
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

/// What `cargo publish` would upload: each crate builds from its package
/// alone, with its dependencies from crates.io, and without a warning.
/// Packaged together, as `cargo publish --workspace` would publish them:
/// the test kit names the runtime by version, which cargo then takes from
/// the runtime's own package instead of crates.io.
#[test]
fn the_kits_crates_package_as_publishable_crates() {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kit-crates-package");
    let mut command = Command::new(env!("CARGO"));
    command.arg("package");
    for (name, _) in CRATES {
        command.args(["--package", name]);
    }
    let output = command
        .args(["--allow-dirty", "--target-dir"])
        .arg(&target)
        .current_dir(kit_root())
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo package");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo package failed:\n{log}");
    assert!(!log.contains("warning"), "cargo package warned:\n{log}");
    for (name, _) in CRATES {
        let crate_file = format!("package/{name}-{}.crate", version(name));
        assert!(
            target.join(&crate_file).is_file(),
            "no {crate_file}:\n{log}"
        );
    }
}
