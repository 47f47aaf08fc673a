//! What Kafka adds to the commands: `consume` (records from topics, each
//! partition's offset committed after the transactions before it), and a
//! relay that produces notifications to topics.

use std::process::ExitCode;
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;

use super::super::consumer::{Consumer, OpenStore};
use super::super::output::outln;
use super::super::work::WorkArgs;
use crate::envelope::Wire;
use crate::handler::Registry;
use crate::relay::kafka::{KafkaSink, KafkaSinkOptions};
use crate::relay::lines::lines_sink;
use crate::relay::{Notice, Sink};
use crate::source::kafka::KafkaOptions;
use crate::store::Store;

/// Consume events from Kafka topics, each partition's offset committed
/// only after the transactions of the records before it.
///
/// A record's value is a JSON envelope like `run`'s input lines; its
/// `message-id` header (or else the envelope's `id`) is the message id.
/// Several processes with the same `--group` share the partitions. A
/// failing record is retried here with growing waits (holding its
/// partition's offset back) until it applies or is dead-lettered. Runs
/// until Ctrl-C or SIGTERM (which finish and commit what was taken, then
/// exit 0; a second signal quits at once), or until idle for
/// `--exit-when-idle`. Prints one summary line: the outcomes, then what
/// the broker was told.
// `--group` is the source's option; its default is the project's name.
#[derive(Args)]
#[command(mut_arg("group", |arg| arg.default_value(C::NAME).required(false)))]
pub struct ConsumeArgs<C: Consumer> {
    #[command(flatten)]
    kafka: KafkaOptions,
    #[command(flatten)]
    work: WorkArgs<C>,
}

/// Consumes from the broker `args` name through the consumers of `C`.
pub fn consume<C: Consumer>(args: ConsumeArgs<C>, database: &C::Options) -> anyhow::Result<ExitCode>
where
    <<C::Store as Store>::Registry as Registry>::Event: Wire + Clone + Send + 'static,
{
    let consumers = args.work.consumers(database)?;
    let database = database.open()?;
    let runtime = tokio::runtime::Runtime::new().context("could not start the runtime")?;
    runtime.block_on(async {
        let (source, committer) = args.kafka.connect().await?;
        let probe = Box::new(args.kafka.probe()?);
        let counts = source.counts();
        let report = args
            .work
            .deliver(Box::new(source), consumers, database, Some(probe))
            .await?;
        tokio::task::spawn_blocking(move || committer.finish())
            .await
            .context("the final offset commit")?;
        let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        outln!(
            "{} redelivered={} done={} parked={} commits={} failed_commits={}",
            report.summary,
            count(&counts.redelivered),
            count(&counts.done),
            count(&counts.parked),
            count(&counts.commits),
            count(&counts.failed_commits),
        )?;
        Ok(ExitCode::SUCCESS)
    })
}

/// Where `relay send` sends notifications: Kafka, or JSON lines.
#[derive(Args)]
pub struct SinkOptions {
    /// Write JSON lines to this file (`-`: standard output) instead of
    /// producing to Kafka.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    kafka: KafkaSinkOptions,
}

impl SinkOptions {
    pub async fn open<N: Notice>(&self) -> anyhow::Result<Box<dyn Sink<N>>> {
        Ok(match &self.output {
            Some(path) => Box::new(lines_sink(Some(path))?),
            None => Box::new(KafkaSink::connect(&self.kafka)?),
        })
    }
}
