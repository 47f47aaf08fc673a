//! Command-line interface: the options of every subcommand, one file per
//! command. The library does the work; these files only wire it up.

mod accounts;
{% if broker == "nats" -%}
#[path = "broker/nats.rs"]
{%- elsif broker == "kafka" -%}
#[path = "broker/kafka.rs"]
{%- else -%}
#[path = "broker/none.rs"]
{%- endif %}
mod broker;
mod dead_letters;
mod metrics;
mod purge;
mod relay;
mod run;
mod seed;
mod work;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use inbox_kit_runtime::outln;

use {{crate_name}}::database::DatabaseOptions;

// The runtime's parts of every consumer's command line, under the paths
// the commands name.
pub use inbox_kit_runtime::cli::{output, progress, telemetry};

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

#[derive(Subcommand)]
enum Command {
    Run(run::RunArgs),
    #[command(flatten)]
    Broker(broker::BrokerCommand),
    OpenAccount(accounts::OpenAccountArgs),
    Seed(seed::SeedArgs),
    /// Show balances, inbox rows per consumer, notifications and dead letters.
    Status,
    #[command(subcommand)]
    DeadLetters(dead_letters::DeadLettersCommand),
    Purge(purge::PurgeArgs),
    #[command(subcommand)]
    Relay(relay::RelayCommand),
    /// Create the tables that are missing (`run`, `open-account` and `seed` do it too).
    Migrate,
}

impl Cli {
    /// Where traces go, if anywhere.
    pub fn otlp_endpoint(&self) -> Option<&str> {
        self.otlp_endpoint.as_deref()
    }

    pub fn execute(self) -> anyhow::Result<ExitCode> {
        let database = &self.database;
        match self.command {
            Command::Run(args) => run::run(args, database),
            Command::Broker(command) => command.execute(database),
            Command::OpenAccount(args) => accounts::open_account(args, &database.open()?),
            Command::Seed(args) => seed::seed(args, database),
            Command::Status => accounts::status(&database.open_existing()?),
            Command::DeadLetters(command) => {
                dead_letters::execute(command, &database.open_existing()?)
            }
            Command::Purge(args) => purge::purge(args, &database.open_existing()?),
            Command::Relay(command) => relay::execute(command, database),
            Command::Migrate => {
                database.open()?;
                outln!("tables ready")?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

/// Reports a mistake on the command line the way clap does (exit code 2).
fn usage_error(message: impl std::fmt::Display) -> ! {
    use clap::CommandFactory;
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, message)
        .exit()
}
