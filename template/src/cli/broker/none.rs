//! The commands a message broker adds: none in this project, which reads
//! JSON lines (`run`). A project generated with `broker=nats` has `consume`
//! here.

use std::process::ExitCode;

use {{crate_name}}::database::DatabaseOptions;

/// No broker, no command.
#[derive(clap::Subcommand)]
pub enum BrokerCommand {}

impl BrokerCommand {
    pub fn execute(self, _database: &DatabaseOptions) -> anyhow::Result<ExitCode> {
        match self {}
    }
}
