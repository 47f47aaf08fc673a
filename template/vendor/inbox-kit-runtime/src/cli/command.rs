//! The commands every consumer has, whatever its handlers: [`Command`],
//! flattened into a project's own subcommands.

use std::process::ExitCode;

use clap::Subcommand;

use super::consumer::{Consumer, OpenStore};
use super::output::outln;
use super::{dead_letters, purge, relay, run, seed};
use crate::envelope::Wire;
use crate::handler::Registry;
use crate::store::Store;

/// The runtime's commands for consumer `C`.
#[derive(Subcommand)]
pub enum Command<C: Consumer> {
    Run(run::RunArgs<C>),
    #[cfg(any(feature = "nats", feature = "kafka"))]
    Consume(super::broker::ConsumeArgs<C>),
    Seed(seed::SeedArgs),
    #[command(subcommand)]
    DeadLetters(dead_letters::DeadLettersCommand),
    Purge(purge::PurgeArgs),
    #[command(subcommand)]
    Relay(relay::RelayCommand),
    /// Create the tables that are missing (`run` and `seed` do it too).
    Migrate,
}

impl<C: Consumer> Command<C>
where
    <<C::Store as Store>::Registry as Registry>::Event: Wire + Clone + Send + 'static,
{
    /// Runs the command on the database `database` names.
    pub fn execute(self, database: &C::Options) -> anyhow::Result<ExitCode> {
        match self {
            Command::Run(args) => run::run(args, database),
            #[cfg(any(feature = "nats", feature = "kafka"))]
            Command::Consume(args) => super::broker::consume(args, database),
            Command::Seed(args) => seed::seed(args, || database.open()),
            Command::DeadLetters(command) => {
                dead_letters::execute(command, &database.open_existing()?, C::select)
            }
            Command::Purge(args) => purge::purge(args, &database.open_existing()?),
            Command::Relay(command) => relay::execute::<C>(command, database),
            Command::Migrate => {
                database.open()?;
                outln!("tables ready")?;
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}
