//! Command-line interface: the options of every subcommand, one file per
//! command. The library does the work; these files only wire it up.

mod accounts;
mod dead_letters;
mod purge;
mod run;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use {{crate_name}}::database::{Database, Durability, Settings};
use {{crate_name}}::{defaults, handlers};

/// An idempotent message consumer: every message is applied once per
/// consumer, however often it is delivered.
#[derive(Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    database: DatabaseArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct DatabaseArgs {
    /// SQLite database file (created if missing).
    #[arg(
        long,
        global = true,
        env = "CONSUMER_DB",
        default_value = "consumer.db"
    )]
    db: PathBuf,
    /// `normal`: fast commits that survive a crash of this process;
    /// `full`: every commit reaches the disk before it counts.
    #[arg(long, global = true, value_enum, default_value_t = defaults::DURABILITY)]
    durability: Durability,
}

#[derive(Subcommand)]
enum Command {
    Run(run::RunArgs),
    OpenAccount(accounts::OpenAccountArgs),
    /// Show balances, inbox rows per consumer, notifications and dead letters.
    Status,
    #[command(subcommand)]
    DeadLetters(dead_letters::DeadLettersCommand),
    Purge(purge::PurgeArgs),
}

impl Cli {
    pub async fn execute(self) -> anyhow::Result<ExitCode> {
        let settings = Settings {
            durability: self.database.durability,
            ..Settings::default()
        };
        let path = self.database.db;
        match self.command {
            Command::Run(args) => run::run(args, &path, settings).await,
            Command::OpenAccount(args) => accounts::open_account(args, &open(&path, settings)?),
            Command::Status => accounts::status(&open_existing(&path, settings)?),
            Command::DeadLetters(command) => {
                dead_letters::execute(command, &open_existing(&path, settings)?)
            }
            Command::Purge(args) => purge::purge(args, &open_existing(&path, settings)?),
        }
    }
}

/// Opens the database with every handler's tables, creating it if needed.
fn open(path: &Path, settings: Settings) -> anyhow::Result<Database> {
    Database::open(path, settings, &handlers::all())
        .with_context(|| format!("could not open the database {}", path.display()))
}

/// Like [`open`], for commands that only make sense on an existing
/// database: a mistyped `--db` should not quietly create an empty one.
fn open_existing(path: &Path, settings: Settings) -> anyhow::Result<Database> {
    if !path.exists() {
        anyhow::bail!(
            "no database at {} (give its path with --db or CONSUMER_DB; `run` and `open-account` create one)",
            path.display()
        );
    }
    open(path, settings)
}

/// Reports a mistake on the command line the way clap does (exit code 2).
fn usage_error(message: impl std::fmt::Display) -> ! {
    use clap::CommandFactory;
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, message)
        .exit()
}
