//! Generation: every placeholder has a default, the output is what we
//! expect (snapshots), no template syntax leaks into a generated project,
//! options reach the code, and bad option values are refused.

mod common;

use std::fs;

use common::{cargo_ok, files, generate, kit};

#[test]
fn default_variant_has_the_expected_files() {
    let project = generate("orders-consumer", &[]);
    insta::assert_snapshot!("file_list", files(&project.root).join("\n"));
}

#[test]
fn rendered_manifests_and_agent_files_match_their_snapshots() {
    let project = generate("orders-consumer", &[]);
    for file in ["Cargo.toml", "CLAUDE.md", ".claude/settings.json"] {
        let text = fs::read_to_string(project.root.join(file)).expect("generated file");
        insta::assert_snapshot!(file.replace(['/', '.'], "_"), text);
    }
}

#[test]
fn no_template_syntax_survives_generation() {
    let project = generate("orders-consumer", &[]);
    for file in files(&project.root) {
        let Ok(text) = fs::read_to_string(project.root.join(&file)) else {
            continue; // not text
        };
        for marker in ["{{", "{%"] {
            for (at, _) in text.match_indices(marker) {
                // GitHub Actions expressions are meant to survive.
                let github_expression = file.starts_with(".github/") && text[..at].ends_with('$');
                assert!(github_expression, "{file} keeps `{marker}` at byte {at}");
            }
        }
    }
    let workflow = fs::read_to_string(project.root.join(".github/workflows/ci.yml")).unwrap();
    assert!(
        workflow.contains("group: ci-${{ github.ref }}"),
        "GitHub expressions must be kept verbatim"
    );
    assert!(workflow.contains("scripts/stress.sh \"${{ env.STRESS_ITERATIONS }}\""));
    assert!(
        !workflow.contains("raw %}"),
        "the raw markers themselves must not be copied"
    );
}

#[test]
fn options_reach_the_generated_code() {
    let project = generate("busy-consumer", &["default_workers=8", "durability=full"]);
    let defaults = fs::read_to_string(project.root.join("src/defaults.rs")).unwrap();
    assert!(
        defaults.contains("WORKERS: u16 = 8;"),
        "workers default not applied"
    );
    assert!(
        defaults.contains("DURABILITY: Durability = Durability::Full;"),
        "durability default not applied"
    );
    let manifest = fs::read_to_string(project.root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"busy-consumer\""));
    // The variant must compile, not just render.
    cargo_ok(&project.root, &["check", "--all-targets"]);
}

#[test]
fn bad_option_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = kit()
        .args(["new", "x-consumer", "--destination"])
        .arg(dir.path())
        .args(["--define", "default_workers=zero"])
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "an invalid worker count was accepted"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("\"zero\" is not a valid value for default_workers"),
        "unclear error: {stderr}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "a failed generation left {leftovers:?} behind"
    );
}

#[test]
fn a_missing_destination_is_a_clear_error() {
    let output = kit()
        .args([
            "new",
            "x-consumer",
            "--destination",
            "/nonexistent/inbox-kit-test",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is not a folder"),
        "unexpected error: {stderr}"
    );
}
