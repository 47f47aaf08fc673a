//! What NATS JetStream adds to the commands: `consume` (deliveries from a
//! stream, until interrupted or idle), and a relay that publishes
//! notifications to a stream.

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;

use {{crate_name}}::database::DatabaseOptions;
use {{crate_name}}::handlers::Notification;
use {{crate_name}}::relay::Sink;
use {{crate_name}}::relay::lines::lines_sink;
use {{crate_name}}::relay::nats::{NatsSink, NatsSinkOptions};
use {{crate_name}}::source::nats::NatsOptions;

use super::work::WorkArgs;
use crate::cli::output::outln;

/// The commands of this project's broker.
#[derive(clap::Subcommand)]
pub enum BrokerCommand {
    Consume(ConsumeArgs),
}

impl BrokerCommand {
    pub fn execute(self, database: &DatabaseOptions) -> anyhow::Result<ExitCode> {
        match self {
            Self::Consume(args) => consume(args, database),
        }
    }
}

/// Consume events from a NATS JetStream stream, each acknowledged only
/// after its transaction committed.
///
/// The stream's messages are JSON envelopes like `run`'s input lines; the
/// envelope's `id` is the message id. Several processes with the same
/// `--durable` share the work. Runs until Ctrl-C or SIGTERM (which finish
/// and acknowledge what was taken, then exit 0; a second signal quits at
/// once), or until idle for `--exit-when-idle`. Prints one summary line:
/// the outcomes, then what the broker was told.
// `--durable` is the runtime's option; its default is this project's name.
#[derive(Args)]
#[command(mut_arg("durable", |arg| arg.default_value("{{project-name}}").required(false)))]
pub struct ConsumeArgs {
    #[command(flatten)]
    nats: NatsOptions,
    #[command(flatten)]
    work: WorkArgs,
}

fn consume(args: ConsumeArgs, database: &DatabaseOptions) -> anyhow::Result<ExitCode> {
    let consumers = args.work.consumers(database);
    let database = database.open()?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the runtime")?;
    runtime.block_on(async {
        let (source, settled) = args.nats.connect().await?;
        let probe = Box::new(source.probe());
        let counts = source.counts();
        let report = args
            .work
            .deliver(Box::new(source), consumers, database, Some(probe))
            .await?;
        settled.finish().await;
        let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        outln!(
            "{} redelivered={} acknowledged={} retried={} terminated={} unconfirmed={}",
            report.summary,
            count(&counts.redelivered),
            count(&counts.acknowledged),
            count(&counts.retried),
            count(&counts.terminated),
            count(&counts.unconfirmed),
        )?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Where `relay send` sends notifications: JetStream, or JSON lines.
#[derive(Args)]
pub struct SinkOptions {
    /// Write JSON lines to this file (`-`: standard output) instead of
    /// publishing to JetStream.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    nats: NatsSinkOptions,
}

impl SinkOptions {
    pub async fn open(&self) -> anyhow::Result<Box<dyn Sink<Notification>>> {
        Ok(match &self.output {
            Some(path) => Box::new(lines_sink(Some(path))?),
            None => Box::new(NatsSink::connect(&self.nats).await?),
        })
    }
}
