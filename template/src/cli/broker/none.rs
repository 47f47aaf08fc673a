//! What a message broker adds to the commands: here none, so this project
//! reads JSON lines (`run`) and its relay writes JSON lines. A project
//! generated with `broker=nats` has `consume` here, and a relay that
//! publishes to JetStream.

use std::process::ExitCode;

use {{crate_name}}::database::DatabaseOptions;
use {{crate_name}}::handlers::Notification;
use {{crate_name}}::relay::Sink;
use {{crate_name}}::relay::lines::lines_sink;

/// No broker, no command.
#[derive(clap::Subcommand)]
pub enum BrokerCommand {}

impl BrokerCommand {
    pub fn execute(self, _database: &DatabaseOptions) -> anyhow::Result<ExitCode> {
        match self {}
    }
}

/// Where `relay send` writes notifications: JSON lines.
#[derive(clap::Args)]
pub struct SinkOptions {
    /// File the notifications are appended to, one JSON line each; `-` or
    /// nothing writes to standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
}

impl SinkOptions {
    pub async fn open(&self) -> anyhow::Result<Box<dyn Sink<Notification>>> {
        Ok(Box::new(lines_sink(self.output.as_deref())?))
    }
}
