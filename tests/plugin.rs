//! The Claude Code plugin (`plugin/`, listed by
//! `.claude-plugin/marketplace.json`): a valid manifest, a marketplace entry
//! that points at it, a Stop hook whose command is an executable file, and
//! commands and scripts that are byte for byte the template's (their one
//! source; `scripts/sync-plugin.sh` copies them). Its hook also works in a
//! project inbox-kit did not generate.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use common::git::Repo;
use common::hook::Stop;
use common::kit_root;

fn json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn plugin_root() -> PathBuf {
    kit_root().join("plugin")
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string `{key}` in {value}"))
}

#[test]
fn manifest_and_marketplace_describe_the_plugin() {
    let manifest = json(&plugin_root().join(".claude-plugin/plugin.json"));
    let name = text(&manifest, "name");
    assert!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "the plugin's name must be kebab-case: {name}"
    );
    assert!(!text(&manifest, "description").is_empty());
    let version = text(&manifest, "version");
    assert_eq!(version.split('.').count(), 3, "not semver: {version}");

    let marketplace = json(&kit_root().join(".claude-plugin/marketplace.json"));
    assert!(!text(&marketplace, "name").is_empty());
    assert!(!text(&marketplace["owner"], "name").is_empty());
    let plugins = marketplace["plugins"].as_array().expect("a plugins list");
    let entry = plugins
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("the marketplace does not list {name}"));
    let source = text(entry, "source");
    assert!(
        source.starts_with("./"),
        "a local source is a relative path starting with ./: {source}"
    );
    let listed = kit_root().join(source);
    assert_eq!(
        listed.canonicalize().unwrap(),
        plugin_root().canonicalize().unwrap(),
        "the marketplace's source is not plugin/"
    );
}

#[test]
fn hook_configuration_runs_an_executable_stop_hook() {
    let hooks = json(&plugin_root().join("hooks/hooks.json"));
    let stop = hooks["hooks"]["Stop"].as_array().expect("a Stop hook list");
    assert!(!stop.is_empty(), "no Stop hook");
    let mut commands = 0;
    for group in stop {
        for hook in group["hooks"].as_array().expect("hooks in a group") {
            assert_eq!(text(hook, "type"), "command");
            let command = text(hook, "command")
                .replace("${CLAUDE_PLUGIN_ROOT}", plugin_root().to_str().unwrap())
                .replace('"', "");
            let path = Path::new(&command);
            assert!(path.is_file(), "the hook runs a missing file: {command}");
            let mode = {
                use std::os::unix::fs::PermissionsExt;
                fs::metadata(path).unwrap().permissions().mode()
            };
            assert!(mode & 0o111 != 0, "{command} is not executable");
            commands += 1;
        }
    }
    assert!(commands > 0, "the Stop hook runs no command");
}

/// The hook's own budget ends well inside the time Claude Code gives it,
/// and a hook that times out anyway blocks the stop (where Claude Code
/// honours `onFailure`), in the plugin and in a generated project.
#[test]
fn the_stop_hook_fails_closed_within_its_timeout() {
    let script = fs::read_to_string(plugin_root().join("scripts/stop-hook.sh")).unwrap();
    let budget: u64 = script
        .split("budget=${STOP_HOOK_BUDGET_SECONDS:-")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .and_then(|number| number.parse().ok())
        .expect("the hook's default budget");
    for config in [
        plugin_root().join("hooks/hooks.json"),
        kit_root().join("template/.claude/settings.json"),
    ] {
        let hooks = json(&config);
        for group in hooks["hooks"]["Stop"].as_array().expect("a Stop hook list") {
            for hook in group["hooks"].as_array().expect("hooks in a group") {
                let timeout = hook["timeout"].as_u64().expect("a timeout");
                assert!(
                    budget + 30 <= timeout,
                    "{}: a budget of {budget} s leaves no room inside a timeout of {timeout} s",
                    config.display()
                );
                assert_eq!(text(hook, "onFailure"), "block", "{}", config.display());
            }
        }
    }
}

/// Files of `dir` with their contents, by name.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read(&path).unwrap())
        })
        .collect();
    found.sort();
    found
}

#[test]
fn commands_and_scripts_are_the_templates_own() {
    let commands = contents(&plugin_root().join("commands"));
    let names: Vec<_> = commands.iter().map(|(name, _)| name.as_str()).collect();
    for command in ["retrofit-inbox.md", "review-key.md", "diagnose-parallel.md"] {
        assert!(names.contains(&command), "the plugin lacks {command}");
    }
    assert!(
        !names.contains(&"add-handler.md"),
        "/add-handler needs a generated project's files; the plugin does not ship it"
    );
    let scripts = contents(&plugin_root().join("scripts"));
    for (folder, files) in [
        ("template/.claude/commands", commands),
        ("template/scripts", scripts),
    ] {
        for (name, bytes) in files {
            let source = kit_root().join(folder).join(&name);
            assert!(
                fs::read(&source).ok().as_ref() == Some(&bytes),
                "plugin's {name} differs from {folder}/{name}: run scripts/sync-plugin.sh"
            );
        }
    }
}

/// A Rust project inbox-kit did not generate: no tests/conformance, so the
/// plugin's hook takes every integration test as the required tests. It is
/// a git repository building into its own `target/`, the usual layout.
#[test]
fn the_plugins_hook_judges_a_project_it_did_not_generate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("plugin-foreign-consumer");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(root.join("tests")).unwrap();
    fs::write(root.join(".gitignore"), "/target\n*.db\n").unwrap();
    fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"plugin-foreign-consumer\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\n",
    )
    .unwrap();
    fs::write(
        root.join("src/lib.rs"),
        "//! A consumer.\n\n/// Applies a debit.\npub fn apply(balance: i64, amount: i64) -> i64 {\n    balance - amount\n}\n",
    )
    .unwrap();
    let test = |expected: i64| {
        format!(
            "#[test]\nfn applies_a_debit() {{\n    assert_eq!(plugin_foreign_consumer::apply(1000, 10), {expected});\n}}\n"
        )
    };
    fs::write(root.join("tests/debit.rs"), test(980)).unwrap();
    Repo::init(&root);

    let stop = |session| {
        let mut stop = Stop::new(&root, session);
        stop.script = plugin_root().join("scripts/stop-hook.sh");
        stop.claude_project_dir = true;
        stop.own_target = true;
        stop.run()
    };
    let blocked = stop("plugin-foreign");
    let reason = blocked.reason();
    assert!(
        reason.contains("  - applies_a_debit  (cargo test --test *)"),
        "{reason}"
    );

    fs::write(root.join("tests/debit.rs"), test(990)).unwrap();
    stop("plugin-foreign").assert_allowed();

    // A file git ignores (a local database) changes nothing that is checked.
    fs::write(root.join("local.db"), "rows").unwrap();
    let cached = stop("plugin-foreign");
    cached.assert_allowed();
    assert!(
        cached.cargo_calls.is_empty(),
        "an ignored file made the hook run cargo again: {:?}",
        cached.cargo_calls
    );

    // Not a Rust project: the hook stays out of the way.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut quiet = Stop::new(elsewhere.path(), "plugin-elsewhere");
    quiet.script = plugin_root().join("scripts/stop-hook.sh");
    quiet.claude_project_dir = true;
    let answer = quiet.run();
    assert!(answer.stdout.is_empty(), "{answer:?}");
    assert!(answer.cargo_calls.is_empty(), "{answer:?}");
}
