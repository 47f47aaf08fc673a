//! Generation: every placeholder has a default, the output is what we
//! expect (snapshots), no template syntax leaks into a generated project,
//! options reach the code, each variant holds only its own database's code,
//! and bad option values are refused.

mod common;

use std::fs;
use std::path::Path;

use common::{
    POSTGRES, POSTGRES_KAFKA, POSTGRES_NATS, SQLITE, SQLITE_KAFKA, SQLITE_NATS, VARIANTS, cargo_ok,
    files, generate, generate_as_shipped, kit, kit_root, modules,
};

#[test]
fn each_variant_has_the_expected_files() {
    let project = generate_as_shipped("orders-consumer", &[], &[]);
    insta::assert_snapshot!("file_list", files(&project.root).join("\n"));
    let project = generate_as_shipped("orders-consumer", POSTGRES.defines, &[]);
    insta::assert_snapshot!("file_list_postgres", files(&project.root).join("\n"));
    let project = generate_as_shipped("orders-consumer", SQLITE_NATS.defines, &[]);
    insta::assert_snapshot!("file_list_sqlite_nats", files(&project.root).join("\n"));
    let project = generate_as_shipped("orders-consumer", POSTGRES_NATS.defines, &[]);
    insta::assert_snapshot!("file_list_postgres_nats", files(&project.root).join("\n"));
    let project = generate_as_shipped("orders-consumer", SQLITE_KAFKA.defines, &[]);
    insta::assert_snapshot!("file_list_sqlite_kafka", files(&project.root).join("\n"));
    let project = generate_as_shipped("orders-consumer", POSTGRES_KAFKA.defines, &[]);
    insta::assert_snapshot!("file_list_postgres_kafka", files(&project.root).join("\n"));
}

/// The seam is right when the required tests need no change to move to
/// another database: `tests/conformance/` is the same, byte for byte, in
/// every variant.
#[test]
fn the_required_tests_are_the_same_files_in_every_variant() {
    let read = |defines: &[&str]| {
        let project = generate_as_shipped("orders-consumer", defines, &[]);
        let folder = project.root.join("tests/conformance");
        let mut contents: Vec<(String, Vec<u8>)> = fs::read_dir(&folder)
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, fs::read(&path).unwrap())
            })
            .collect();
        contents.sort();
        contents
    };
    let sqlite = read(SQLITE.defines);
    let names: Vec<&str> = sqlite.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "coverage.rs",
            "main.rs",
            "required.rs",
            "restart.rs",
            "teeth.rs"
        ],
        "the required tests are one file of scenarios, with the coverage and teeth checks"
    );
    for variant in VARIANTS {
        assert!(
            read(variant.defines) == sqlite,
            "{} differs from sqlite",
            variant.name
        );
    }
}

/// A project holds only its own broker's code and dependencies. The
/// vendored kit crates are the exception: they are the same in every
/// project, and hold every broker's source behind a feature, so only the
/// project's own broker is built (its lock file, checked here like every
/// other file of the project, names no other broker's client).
#[test]
fn each_variant_holds_only_its_own_broker() {
    // (a variant, the brokers whose code it must not hold)
    let cases = [
        (&SQLITE, ["nats", "kafka"].as_slice()),
        (&SQLITE_NATS, ["kafka"].as_slice()),
        (&SQLITE_KAFKA, ["nats"].as_slice()),
    ];
    for (variant, others) in cases {
        let project = generate_as_shipped("orders-consumer", variant.defines, &[]);
        for file in files(&project.root) {
            if file.starts_with("vendor/") {
                continue;
            }
            let text = fs::read_to_string(project.root.join(&file)).unwrap_or_default();
            for other in others {
                let dependency = if *other == "nats" {
                    "async-nats"
                } else {
                    "rdkafka"
                };
                assert!(
                    !text.contains(dependency) && !text.contains(&dependency.replace('-', "_")),
                    "{}: {file} depends on {dependency}",
                    variant.name
                );
                assert!(
                    !file.contains(other),
                    "{}: {file} is {other}'s",
                    variant.name
                );
            }
        }
    }
    let nats = generate_as_shipped("orders-consumer", SQLITE_NATS.defines, &[]);
    let manifest = fs::read_to_string(nats.root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("async-nats"), "{manifest}");
    assert!(nats.root.join("tests/support/nats/mod.rs").is_file());
    let kafka = generate_as_shipped("orders-consumer", SQLITE_KAFKA.defines, &[]);
    let manifest = fs::read_to_string(kafka.root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("rdkafka"), "{manifest}");
    assert!(kafka.root.join("tests/support/kafka/mod.rs").is_file());
}

/// The kit's own suites test the kit's code: a project does not carry
/// them, and `--kit-suites` adds the ones of its variant (the broker's end
/// to end only with that broker, the database's faults only with that
/// database).
#[test]
fn the_kit_suites_are_added_to_a_project_only_when_asked() {
    let suites = |root: &Path| -> Vec<String> {
        let mut found: Vec<String> = ["reliability", "relay", "broker", "kafka"]
            .into_iter()
            .filter(|suite| root.join("tests").join(suite).join("main.rs").is_file())
            .map(str::to_owned)
            .collect();
        for fault in ["faults_sqlite.rs", "faults_postgres.rs"] {
            if root.join("tests/reliability").join(fault).is_file() {
                found.push(fault.to_owned());
            }
        }
        found
    };
    let plain = generate_as_shipped("orders-consumer", SQLITE_NATS.defines, &[]);
    assert_eq!(suites(&plain.root), Vec::<String>::new());
    let nats = generate_as_shipped("orders-consumer", SQLITE_NATS.defines, &["--kit-suites"]);
    assert_eq!(
        suites(&nats.root),
        ["reliability", "relay", "broker", "faults_sqlite.rs"]
    );
    let kafka = generate_as_shipped("orders-consumer", POSTGRES_KAFKA.defines, &["--kit-suites"]);
    assert_eq!(
        suites(&kafka.root),
        ["reliability", "relay", "kafka", "faults_postgres.rs"]
    );
    let data = fs::read(nats.root.join("tests/data/hostile.jsonl")).unwrap();
    let source = fs::read(kit_root().join("template/kit-suites/tests/data/hostile.jsonl")).unwrap();
    assert!(
        data == source,
        "the hostile corpus is not copied byte for byte"
    );
    let main = fs::read_to_string(nats.root.join("tests/reliability/main.rs")).unwrap();
    assert!(
        main.contains("CARGO_BIN_EXE_orders-consumer") && !main.contains("{{"),
        "the suites are not rendered for the project:\n{main}"
    );
}

/// A project holds only its own database's code and dependencies. The
/// vendored runtime crate is left out: like the published crate it stands
/// for, it holds every database behind a feature, and the project turns on
/// its own one (`tests/kit_crates.rs`).
#[test]
fn each_variant_holds_only_its_own_database() {
    let own = |file: &String| !file.starts_with("vendor/");
    let postgres = generate_as_shipped("orders-consumer", POSTGRES.defines, &[]);
    for file in files(&postgres.root).into_iter().filter(own) {
        let Ok(text) = fs::read_to_string(postgres.root.join(&file)) else {
            continue;
        };
        let lower = text.to_lowercase();
        assert!(!lower.contains("rusqlite"), "{file} mentions rusqlite");
        assert!(!file.contains("sqlite"), "{file} is SQLite's");
    }
    let sqlite = generate_as_shipped("orders-consumer", SQLITE.defines, &[]);
    for file in files(&sqlite.root).into_iter().filter(own) {
        let text = fs::read_to_string(sqlite.root.join(&file)).unwrap_or_default();
        assert!(
            !text.contains("tokio_postgres") && !text.contains("postgres = "),
            "{file} is PostgreSQL's"
        );
        assert!(!file.contains("postgres"), "{file} is PostgreSQL's");
    }
}

/// Every variant's modules, and the kit crates', can be read bottom
/// up: no module imports one that imports it back (directly or around a
/// circle), and the library's root imports none of its own modules (it
/// only declares them). `farm-studio look` draws the same graph.
#[test]
fn modules_import_each_other_without_a_circle() {
    for name in ["inbox-kit-runtime", "inbox-kit-testkit"] {
        let src = kit_root().join("template/vendor").join(name).join("src");
        assert_readable_bottom_up(name, &modules::imports(&src, &name.replace('-', "_")));
    }
    for variant in VARIANTS {
        let project = generate_as_shipped("orders-consumer", variant.defines, &[]);
        let imports = modules::imports(&project.root.join("src"), "orders_consumer");
        assert!(
            imports
                .iter()
                .any(|import| import.from == "inbox" && import.to == "handlers"),
            "the reader sees the inbox run handlers: {imports:#?}"
        );
        assert_readable_bottom_up(variant.name, &imports);
    }
}

/// The check above has teeth: it finds a circle through a `use` group, a
/// `super::` that leaves its folder, and a path in code, and a root that
/// imports its own module; and it passes a crate without them.
#[test]
fn the_module_check_finds_circles_and_imports_from_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |file: &str, text: &str| {
        let path = src.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n");
    write("a/mod.rs", "mod inner;\n");
    write("a/inner.rs", "use super::super::b::B; // names b\n");
    write(
        "b.rs",
        "// crate::a is only mentioned here\npub struct B;\n",
    );
    write("c.rs", "use crate::{b::B, a};\n");
    let imports = modules::imports(src, "x");
    assert!(modules::circle(&imports).is_none(), "{imports:#?}");
    let linked: Vec<(&str, &str)> = imports
        .iter()
        .map(|i| (i.from.as_str(), i.to.as_str()))
        .collect();
    assert_eq!(linked, [("a", "b"), ("c", "b"), ("c", "a")]);

    write(
        "b.rs",
        "pub fn f() -> usize { std::mem::size_of::<crate::c::C>() }\n",
    );
    write("c.rs", "use crate::{b::B, a};\npub struct C;\n");
    let circle = modules::circle(&modules::imports(src, "x")).expect("b -> c -> b");
    let hops: Vec<(&str, &str)> = circle
        .iter()
        .map(|i| (i.from.as_str(), i.to.as_str()))
        .collect();
    assert!(
        hops.contains(&("b", "c")) && hops.contains(&("c", "b")),
        "{hops:?}"
    );

    write("b.rs", "pub struct B;\n");
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub use b as bee;\n",
    );
    let imports = modules::imports(src, "x");
    assert!(
        imports.iter().any(|i| i.from == "lib" && i.to == "b"),
        "{imports:#?}"
    );
}

fn assert_readable_bottom_up(name: &str, imports: &[modules::Import]) {
    if let Some(circle) = modules::circle(imports) {
        let ties: Vec<String> = circle
            .iter()
            .map(|import| format!("{} -> {}: {}", import.from, import.to, import.at))
            .collect();
        panic!("{name}: modules in a circle:\n{}", ties.join("\n"));
    }
    let from_root: Vec<&String> = imports
        .iter()
        .filter(|import| import.from == "lib")
        .map(|import| &import.at)
        .collect();
    assert!(
        from_root.is_empty(),
        "{name}: the library root imports its own modules: {from_root:#?}"
    );
}

#[test]
fn rendered_manifests_and_agent_files_match_their_snapshots() {
    let project = generate_as_shipped("orders-consumer", &[], &[]);
    for file in ["Cargo.toml", "CLAUDE.md", ".claude/settings.json"] {
        let text = fs::read_to_string(project.root.join(file)).expect("generated file");
        insta::assert_snapshot!(file.replace(['/', '.'], "_"), text);
    }
}

#[test]
fn no_template_syntax_survives_generation() {
    let project = generate_as_shipped("orders-consumer", &[], &[]);
    for file in files(&project.root) {
        let Ok(text) = fs::read_to_string(project.root.join(&file)) else {
            continue; // not text
        };
        for marker in ["{{", "{%"] {
            for (at, _) in text.match_indices(marker) {
                // GitHub Actions expressions and Grafana's legend
                // templates (`{{label}}`) are meant to survive.
                let github_expression = file.starts_with(".github/") && text[..at].ends_with('$');
                let grafana_legend = file.starts_with("dashboards/")
                    && marker == "{{"
                    && text[at + 2..].split_once("}}").is_some_and(|(label, _)| {
                        !label.is_empty()
                            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                assert!(
                    github_expression || grafana_legend,
                    "{file} keeps `{marker}` at byte {at}"
                );
            }
        }
    }
    let dashboard = fs::read_to_string(project.root.join("dashboards/consumer.json")).unwrap();
    assert!(
        dashboard.contains("\"legendFormat\": \"{{outcome}}\""),
        "Grafana's legend templates must be kept verbatim"
    );
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

    // Durability is SQLite's: a PostgreSQL project has no such option.
    let project = generate("busy-consumer", &["database=postgres", "default_workers=8"]);
    let defaults = fs::read_to_string(project.root.join("src/defaults.rs")).unwrap();
    assert!(defaults.contains("WORKERS: u16 = 8;"));
    assert!(!defaults.contains("DURABILITY"), "{defaults}");
}

#[test]
fn bad_option_values_are_refused() {
    for (define, expected) in [
        (
            "default_workers=zero",
            "\"zero\" is not a valid value for default_workers",
        ),
        (
            "database=mysql",
            "\"mysql\" is not a valid value for database",
        ),
        (
            "broker=rabbitmq",
            "\"rabbitmq\" is not a valid value for broker",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let output = kit()
            .args(["new", "x-consumer", "--destination"])
            .arg(dir.path())
            .args(["--define", define])
            .output()
            .unwrap();
        assert!(!output.status.success(), "{define} was accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(expected),
            "unclear error for {define}: {stderr}"
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(
            leftovers.is_empty(),
            "a failed generation left {leftovers:?} behind"
        );
    }
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

/// What the generator prints names the project's real folder, relative
/// destinations included (cargo-generate itself shortens every path to
/// its first letters: `/tmp/nc/x` became `t/nc/x`).
#[test]
fn the_generators_messages_name_the_real_destination() {
    let dir = tempfile::tempdir().unwrap();
    let inside = dir.path().join("kit");
    fs::create_dir(&inside).unwrap();
    let output = kit()
        .current_dir(&inside)
        .args(["new", "path-consumer", "--destination", ".."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let real = fs::canonicalize(dir.path()).unwrap().join("path-consumer");
    let real = real.display().to_string();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.trim(), real, "stdout is the project's path");
    let mentions: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("path-consumer") && !line.contains("project-name"))
        .collect();
    assert!(
        mentions.len() >= 2,
        "the destination and the result are reported: {stderr}"
    );
    for line in mentions {
        assert!(line.ends_with(&real), "{line:?} does not name {real}");
    }
}
