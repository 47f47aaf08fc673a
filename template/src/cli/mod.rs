//! Command-line interface: the runtime's commands (`run`,{% if broker != "none" %} `consume`,{% endif %}
//! `seed`, `dead-letters`, `purge`, `relay`, `migrate`: the kit's code,
//! `inbox_kit_runtime::cli`) for this project's handlers and database,
//! and the commands of its own handlers (`accounts.rs`).

mod accounts;

use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use inbox_kit_runtime::cli::command;
use inbox_kit_runtime::cli::consumer::{Consumer, OpenStore};
use inbox_kit_runtime::handler::BadConsumers;

use {{crate_name}}::database::{Database, DatabaseOptions};
use {{crate_name}}::handlers::{self, AnyHandler};

// The runtime's parts of the command line that `main` and `accounts.rs`
// name.
pub use inbox_kit_runtime::cli::{output, telemetry, usage};

/// This project as the runtime's commands see it.
pub struct Project;

impl Consumer for Project {
    type Store = Database;
    type Options = DatabaseOptions;
    const NAME: &str = env!("CARGO_PKG_NAME");
    const WORKERS: u16 = {{crate_name}}::defaults::WORKERS;

    fn select(names: &[String]) -> Result<Vec<Arc<AnyHandler>>, BadConsumers> {
        handlers::select(names)
    }
}

/// An idempotent message consumer: every message is applied once per
/// consumer, however often it is delivered.
#[derive(Parser)]
#[command(version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    database: DatabaseOptions,
    /// Export traces (a span per message received, per delivery, per
    /// notification relayed, continuing the producer's `traceparent`) to
    /// the OpenTelemetry collector at this URL, over OTLP/HTTP (e.g.
    /// http://127.0.0.1:4318). Off by default.
    #[arg(
        long,
        global = true,
        env = "OTEL_EXPORTER_OTLP_ENDPOINT",
        value_name = "URL"
    )]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: boxing the runtime's commands (large with a
// broker's options) would save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Kit(command::Command<Project>),
    OpenAccount(accounts::OpenAccountArgs),
    /// Show balances, inbox rows per consumer, notifications and dead letters.
    Status,
}

impl Cli {
    /// Where traces go, if anywhere.
    pub fn otlp_endpoint(&self) -> Option<&str> {
        self.otlp_endpoint.as_deref()
    }

    pub fn execute(self) -> anyhow::Result<ExitCode> {
        let database = &self.database;
        match self.command {
            Command::Kit(command) => command.execute(database),
            Command::OpenAccount(args) => accounts::open_account(args, &database.open()?),
            Command::Status => accounts::status(&database.open_existing()?),
        }
    }
}
