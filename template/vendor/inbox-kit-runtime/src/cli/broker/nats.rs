//! What NATS JetStream adds to the commands: `consume` (deliveries from a
//! stream, until interrupted or idle), and a relay that publishes
//! notifications to a stream.

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;

use super::super::consumer::{Consumer, OpenStore};
use super::super::output::outln;
use super::super::work::WorkArgs;
use crate::envelope::Wire;
use crate::handler::Registry;
use crate::relay::lines::lines_sink;
use crate::relay::nats::{NatsSink, NatsSinkOptions};
use crate::relay::{Notice, Sink};
use crate::source::nats::NatsOptions;
use crate::store::Store;

/// Consume events from a NATS JetStream stream, each acknowledged only
/// after its transaction committed.
///
/// The stream's messages are JSON envelopes like `run`'s input lines; the
/// envelope's `id` is the message id. Several processes with the same
/// `--durable` share the work. Runs until Ctrl-C or SIGTERM (which finish
/// and acknowledge what was taken, then exit 0; a second signal quits at
/// once), or until idle for `--exit-when-idle`. Prints one summary line:
/// the outcomes, then what the broker was told.
// `--durable` is the source's option; its default is the project's name.
#[derive(Args)]
#[command(mut_arg("durable", |arg| arg.default_value(C::NAME).required(false)))]
pub struct ConsumeArgs<C: Consumer> {
    #[command(flatten)]
    nats: NatsOptions,
    #[command(flatten)]
    work: WorkArgs<C>,
}

/// Consumes from the broker `args` name through the consumers of `C`.
pub fn consume<C: Consumer>(args: ConsumeArgs<C>, database: &C::Options) -> anyhow::Result<ExitCode>
where
    <<C::Store as Store>::Registry as Registry>::Event: Wire + Send + 'static,
{
    let consumers = args.work.consumers(database)?;
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
    pub async fn open<N: Notice>(&self) -> anyhow::Result<Box<dyn Sink<N>>> {
        Ok(match &self.output {
            Some(path) => Box::new(lines_sink(Some(path))?),
            None => Box::new(NatsSink::connect(&self.nats).await?),
        })
    }
}
