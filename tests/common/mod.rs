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
pub mod modules;
pub mod replay;
pub mod trials;

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

/// Generates `name` with the template's defaults plus `defines`, to be
/// built: its kit crates are the kit's own (see [`share_the_kits_crates`]).
pub fn generate(name: &str, defines: &[&str]) -> Generated {
    generate_with(name, defines, &[])
}

/// Like [`generate`], with extra `inbox-kit new` flags.
pub fn generate_with(name: &str, defines: &[&str], flags: &[&str]) -> Generated {
    let project = generate_as_shipped(name, defines, flags);
    share_the_kits_crates(&project.root);
    project
}

/// Generates `name` exactly as `inbox-kit new` leaves it, for tests that
/// read what a project is given rather than build it.
pub fn generate_as_shipped(name: &str, defines: &[&str], flags: &[&str]) -> Generated {
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

/// How a generated project names its vendored copy of a kit crate.
const VENDORED: &str = r#"path = "vendor/inbox-kit-"#;

/// Points the project's kit crates at the kit's own sources instead of
/// its vendored copies (the same files: `kit_crates` checks the copies).
/// Cargo tells path packages apart by their folder, so every project's
/// own copy would be compiled again for each project; the kit's folder is
/// one package, compiled once per feature set into the shared target
/// directory. The lock file is unchanged: it records no paths.
pub fn share_the_kits_crates(root: &Path) {
    let vendor = kit_root().join("template/vendor/inbox-kit-");
    rewrite_manifest(root, VENDORED, &format!(r#"path = "{}"#, vendor.display()));
}

/// Undoes [`share_the_kits_crates`]: a test that edits the runtime edits
/// the project's vendored copy, which the project must then build.
pub fn use_the_vendored_crates(root: &Path) {
    let vendor = kit_root().join("template/vendor/inbox-kit-");
    rewrite_manifest(root, &format!(r#"path = "{}"#, vendor.display()), VENDORED);
}

fn rewrite_manifest(root: &Path, from: &str, to: &str) {
    let manifest = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("the project's Cargo.toml");
    std::fs::write(&manifest, text.replace(from, to)).expect("rewrite Cargo.toml");
}

/// The target directory every generated project builds into.
pub fn shared_target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated-target")
}

/// `cargo <args>` in `project`, with the shared target directory and the
/// servers' addresses.
pub fn cargo(project: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO"))
        .args(args)
        .current_dir(project)
        .env("CARGO_TARGET_DIR", shared_target_dir())
        .env("DATABASE_URL", database_url())
        .env("NATS_URL", nats_url())
        .env_remove("RUSTFLAGS")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run cargo")
}

/// A template variant: its name and the options that select it.
pub struct Variant {
    pub name: &'static str,
    pub defines: &'static [&'static str],
    /// The servers its tests need.
    pub servers: &'static [Server],
}

pub const SQLITE: Variant = Variant {
    name: "sqlite",
    defines: &["database=sqlite"],
    servers: &[],
};

pub const POSTGRES: Variant = Variant {
    name: "postgres",
    defines: &["database=postgres"],
    servers: &[Server::Postgres],
};

pub const SQLITE_NATS: Variant = Variant {
    name: "sqlite-nats",
    defines: &["database=sqlite", "broker=nats"],
    servers: &[Server::Nats],
};

pub const POSTGRES_NATS: Variant = Variant {
    name: "postgres-nats",
    defines: &["database=postgres", "broker=nats"],
    servers: &[Server::Postgres, Server::Nats],
};

pub const SQLITE_KAFKA: Variant = Variant {
    name: "sqlite-kafka",
    defines: &["database=sqlite", "broker=kafka"],
    servers: &[Server::Tansu],
};

pub const POSTGRES_KAFKA: Variant = Variant {
    name: "postgres-kafka",
    defines: &["database=postgres", "broker=kafka"],
    servers: &[Server::Postgres, Server::Tansu],
};

/// Every variant of the template.
pub const VARIANTS: [&Variant; 6] = [
    &SQLITE,
    &POSTGRES,
    &SQLITE_NATS,
    &POSTGRES_NATS,
    &SQLITE_KAFKA,
    &POSTGRES_KAFKA,
];

/// A server some variant's tests need.
#[derive(Clone, Copy, Debug)]
pub enum Server {
    Postgres,
    Nats,
    /// Tansu, the Kafka-compatible broker: not a server at an address but
    /// a program, which the Kafka tests start for themselves.
    Tansu,
}

impl Server {
    /// Where the server is expected: `host:port`, or the program.
    fn place(self) -> String {
        let (url, port) = match self {
            Server::Postgres => (database_url(), 5432),
            Server::Nats => (nats_url(), 4222),
            Server::Tansu => return format!("`{}` (install: {INSTALL_TANSU})", tansu()),
        };
        let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
        let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        let host = host.split(['/', '?']).next().unwrap_or_default();
        if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:{port}")
        }
    }

    fn available(self) -> bool {
        use std::net::{TcpStream, ToSocketAddrs};
        if let Server::Tansu = self {
            return Command::new(tansu())
                .arg("--version")
                .output()
                .is_ok_and(|output| output.status.success());
        }
        let Ok(mut addresses) = self.place().to_socket_addrs() else {
            return false;
        };
        addresses.any(|address| {
            TcpStream::connect_timeout(&address, std::time::Duration::from_secs(2)).is_ok()
        })
    }
}

/// How the Kafka variants' broker is installed (what `.ci/run` does).
pub const INSTALL_TANSU: &str =
    "cargo install tansu --version 0.6.0 --locked --features dynostore,libsql";

/// The Kafka-compatible broker the Kafka variants' tests start: `TANSU`,
/// or `tansu` on the PATH.
pub fn tansu() -> String {
    std::env::var("TANSU").unwrap_or_else(|_| "tansu".to_owned())
}

/// The PostgreSQL server generated projects test against:
/// `DATABASE_URL`, or the local one.
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// The NATS server (with JetStream) generated projects test against:
/// `NATS_URL`, or the local one.
pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// The servers `variant`'s tests need that are not reachable here, each
/// with where it was looked for. The trials of `trials.rs` report a
/// variant missing one as not run (or fail, with
/// `INBOX_KIT_REQUIRE_SERVERS=1`, which `.ci/run` sets).
pub fn missing_servers(variant: &Variant) -> Vec<String> {
    variant
        .servers
        .iter()
        .filter(|server| !server.available())
        .map(|server| format!("{server:?} at {}", server.place()))
        .collect()
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
