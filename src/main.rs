//! `inbox-kit`: generates a consumer crate from this repository's template.
//!
//! It wraps cargo-generate's library so that a machine with only Rust
//! installed can generate a project: no `cargo install`, no system
//! libraries. `inbox-kit new NAME` is the same as `cargo generate --path
//! <this repository> --name NAME --silent --vcs none --no-workspace`, plus a
//! rustfmt pass over the generated Rust files (`--no-format` skips it).
//! `--kit-suites` adds the kit's own suites to the project's tests, as the
//! kit's tests do to run them on every variant.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Generate idempotent message consumers built on a transactional inbox.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate a new consumer crate.
    New {
        /// Project name, e.g. `orders-consumer` (the folder and the crate).
        name: String,
        /// Folder to create the project in.
        #[arg(long, short, default_value = ".")]
        destination: PathBuf,
        /// Set a template option, e.g. `--define default_workers=8` or
        /// `--define durability=full` (repeatable). See README.md.
        #[arg(long, short = 'D', value_name = "KEY=VALUE")]
        define: Vec<String>,
        /// Leave the Rust files exactly as the template renders them instead
        /// of running rustfmt on them (cargo-generate 0.23 does not format).
        #[arg(long)]
        no_format: bool,
        /// Also render the kit's own suites (crash-kill, schedules, fuzz,
        /// faults, the relay, the brokers end to end) into the project's
        /// tests/. They test the kit's code through the example consumers:
        /// for the kit's maintainers, not for a consumer's project.
        #[arg(long)]
        kit_suites: bool,
    },
}

fn main() -> ExitCode {
    ensure_author_is_known();
    let Command::New {
        name,
        destination,
        define,
        no_format,
        kit_suites,
    } = Cli::parse().command;
    let generated =
        inbox_kit::generate(&name, &destination, define.clone(), !no_format).and_then(|path| {
            if kit_suites {
                inbox_kit::add_kit_suites(&name, &path, define, !no_format)?;
            }
            Ok(path)
        });
    match generated {
        Ok(path) => {
            println!("{}", path.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// cargo-generate refuses to run when it cannot name an author (it looks at
/// CARGO_NAME, git identity variables, USER...). Containers often have none
/// of them; the template does not use the author, so any name will do.
fn ensure_author_is_known() {
    const SOURCES: [&str; 6] = [
        "CARGO_NAME",
        "GIT_AUTHOR_NAME",
        "GIT_COMMITTER_NAME",
        "USER",
        "USERNAME",
        "NAME",
    ];
    if SOURCES.iter().all(|name| std::env::var_os(name).is_none()) {
        // SAFETY: called from `main` before any other thread exists.
        unsafe { std::env::set_var("CARGO_NAME", "inbox-kit") };
    }
}
