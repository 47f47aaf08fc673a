//! The options every consuming command shares: workers, batches, attempts,
//! which consumers.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::consumer::{Consumer, HandlerOf, OpenStore};
use super::metrics::MetricsArgs;
use super::progress::ProgressArgs;
use super::usage::UsageError;
use crate::handler::Registry;
use crate::inbox::Policy;
use crate::pipeline::{self, Options, Report};
use crate::source::{BrokerProbe, Source};
use crate::store::Store;

/// A project's registry, through its consumer `C`.
type RegistryOf<C> = <<C as Consumer>::Store as Store>::Registry;

/// A project's event type, through its consumer `C`.
type EventOf<C> = <RegistryOf<C> as Registry>::Event;

/// How deliveries are worked through.
#[derive(Args)]
pub struct WorkArgs<C: Consumer> {
    /// Worker threads, each with its own database connection.
    #[arg(long, short, default_value_t = C::WORKERS, value_parser = clap::value_parser!(u16).range(1..=256))]
    workers: u16,
    /// Messages per transaction (1 = one transaction per message).
    #[arg(long, default_value_t = pipeline::DEFAULT_BATCH_SIZE, value_parser = clap::value_parser!(u16).range(1..))]
    batch_size: u16,
    /// Longest wait, in milliseconds, for a batch to fill before committing it.
    #[arg(long, default_value_t = pipeline::DEFAULT_BATCH_WAIT_MS)]
    batch_wait_ms: u16,
    /// Failed attempts after which a message is dead-lettered (counted across
    /// runs; see `dead-letters`).
    #[arg(long, default_value_t = Policy::default().max_attempts, value_parser = clap::value_parser!(u32).range(1..))]
    max_attempts: u32,
    /// Only run these consumers (repeatable); default: all.
    #[arg(long = "consumer", value_name = "NAME")]
    consumers: Vec<String>,
    #[command(flatten)]
    progress: ProgressArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
    #[arg(skip)]
    consumer: PhantomData<fn() -> C>,
}

impl<C: Consumer> WorkArgs<C>
where
    EventOf<C>: Send + 'static,
{
    /// The consumers to run; a usage error (exit code 2) for an unknown
    /// name, or for options the database refuses.
    pub fn consumers(&self, database: &C::Options) -> Result<Vec<Arc<HandlerOf<C>>>, UsageError> {
        if let Some(refusal) = database.refuse_workers(self.workers) {
            return Err(UsageError(refusal));
        }
        C::select(&self.consumers).map_err(|error| UsageError(error.to_string()))
    }

    /// Delivers what `source` yields to `consumers` on `database`, with
    /// these options (serving metrics about the run, `database` and the
    /// broker's `probe` if asked), until the source ends or a signal stops
    /// it. Runs on the current runtime.
    pub async fn deliver(
        &self,
        source: Box<dyn Source<EventOf<C>>>,
        consumers: Vec<Arc<HandlerOf<C>>>,
        database: C::Store,
        probe: Option<Box<dyn BrokerProbe>>,
    ) -> anyhow::Result<Report> {
        let options = self.options(&database, &consumers, probe).await?;
        let policy = self.policy();
        pipeline::run(source, consumers, move || database.inbox(policy), options).await
    }

    fn policy(&self) -> Policy {
        Policy {
            max_attempts: self.max_attempts,
        }
    }

    async fn options(
        &self,
        database: &C::Store,
        consumers: &[Arc<HandlerOf<C>>],
        broker: Option<Box<dyn BrokerProbe>>,
    ) -> anyhow::Result<Options<RegistryOf<C>>> {
        Ok(Options {
            workers: usize::from(self.workers),
            batch_size: usize::from(self.batch_size),
            batch_wait: Duration::from_millis(u64::from(self.batch_wait_ms)),
            progress: self.progress.progress(),
            meter: self.metrics.meter(database, consumers, broker).await?,
            ..Options::default()
        })
    }
}
