//! `relay`: send the outbox's notifications, at least once, each with an
//! idempotency key; look at the ones parked after too many failed sends.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::broker::SinkOptions;
use super::consumer::{Consumer, OpenStore};
use super::metrics::MetricsArgs;
use super::output::outln;
use super::progress::ProgressArgs;
use crate::relay::{self, Queue, RelayPolicy, Until, Watch};
use crate::stop::{self, Stop};
use crate::store::Store;

/// The outbox's relay.
#[derive(Subcommand)]
pub enum RelayCommand {
    Send(SendArgs),
    /// List notifications parked after too many failed sends.
    Parked,
    /// Give parked notifications (all, or these keys) another round of
    /// attempts.
    Requeue {
        /// Keys as `relay parked` shows them; default: all.
        keys: Vec<String>,
    },
}

/// Send the outbox's notifications, marking each sent only after the
/// receiver confirmed it.
///
/// Each carries its idempotency key (`channel:event id`), the same on every
/// resend: a crash between sending and marking sends a notification again,
/// never zero times. A failed send is retried later, waiting longer each
/// time, and parked after --max-attempts. Runs until Ctrl-C or SIGTERM, or
/// with --until-done until every notification is sent or parked. Prints
/// one summary line. Exit code 4 if a notification was parked.
#[derive(Args)]
pub struct SendArgs {
    #[command(flatten)]
    sink: SinkOptions,
    /// Notifications taken per transaction.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..))]
    batch_size: u16,
    /// Failed sends after which a notification is parked.
    #[arg(long, default_value_t = RelayPolicy::default().max_attempts, value_parser = clap::value_parser!(u32).range(1..))]
    max_attempts: u32,
    /// The wait after a first failed send; it doubles with each failure,
    /// up to a minute.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    retry_after: Duration,
    /// Stop once every notification is sent or parked.
    #[arg(long)]
    until_done: bool,
    #[command(flatten)]
    progress: ProgressArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
}

/// Runs `command` on the database `database` names.
pub fn execute<C: Consumer>(
    command: RelayCommand,
    database: &C::Options,
) -> anyhow::Result<ExitCode> {
    match command {
        RelayCommand::Send(args) => send(args, database.open()?),
        RelayCommand::Parked => {
            let parked = database.open_existing()?.relay_queue()?.parked()?;
            for letter in &parked {
                outln!(
                    "{} failures={} error={:?}",
                    letter.key,
                    letter.failures,
                    letter.last_error
                )?;
            }
            outln!("parked={}", parked.len())?;
            Ok(ExitCode::SUCCESS)
        }
        RelayCommand::Requeue { keys } => {
            let requeued = database.open_existing()?.relay_queue()?.requeue(&keys)?;
            outln!("requeued={requeued}")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn send<S: Store>(args: SendArgs, database: S) -> anyhow::Result<ExitCode> {
    let policy = RelayPolicy {
        max_attempts: args.max_attempts,
        retry_after: args.retry_after,
    };
    let until = if args.until_done {
        Until::Done
    } else {
        Until::Stopped
    };
    let runtime = tokio::runtime::Runtime::new().context("could not start the runtime")?;
    let stop = Arc::new(Stop::default());
    runtime.spawn(stop::on_signals(stop.clone()));
    let mut queue = database.relay_queue()?;
    let meter = runtime.block_on(args.metrics.meter(&database, &[], None))?;
    let mut sink = runtime.block_on(args.sink.open())?;
    let counts = runtime.block_on(runtime.spawn_blocking(move || {
        let watch = Watch {
            until,
            stop: &stop,
            progress: &args.progress.progress(),
            meter: meter.as_ref(),
        };
        relay::relay(
            &mut queue,
            sink.as_mut(),
            usize::from(args.batch_size),
            policy,
            watch,
        )
    }))??;
    outln!("{counts}")?;
    Ok(if counts.parked > 0 {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    })
}
