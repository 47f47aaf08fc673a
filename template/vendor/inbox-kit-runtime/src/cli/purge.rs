//! `purge`: delete inbox rows older than a window, never inside the
//! broker's redelivery horizon unless forced.

use std::io::{self, IsTerminal};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use indicatif::ProgressBar;

use super::output::outln;
use crate::retention;
use crate::store::Store;

/// Delete inbox rows, attempt counts and sent notifications older than a
/// window, in small transactions, while deliveries may go on.
#[derive(Args)]
pub struct PurgeArgs {
    /// Delete rows received longer ago than this, e.g. `30d`, `36h`.
    #[arg(long, value_parser = humantime::parse_duration)]
    older_than: Duration,
    /// The longest time the broker may still redeliver a message (SQS keeps
    /// messages up to 14 days); a shorter purge window is refused.
    #[arg(long, env = "CONSUMER_REDELIVERY_HORIZON", default_value = "14d", value_parser = humantime::parse_duration)]
    redelivery_horizon: Duration,
    /// Purge inside the redelivery horizon anyway.
    #[arg(long)]
    force: bool,
    /// Rows deleted per transaction.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    batch_rows: u32,
}

pub fn purge(args: PurgeArgs, database: &impl Store) -> anyhow::Result<ExitCode> {
    retention::check_window(args.older_than, args.redelivery_horizon, args.force)?;
    let spinner = if io::stderr().is_terminal() {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    let purged = database.purge(args.older_than, args.batch_rows, &mut |rows| {
        spinner.set_message(format!("{rows} rows deleted"));
        spinner.tick();
    })?;
    spinner.finish_and_clear();
    outln!(
        "purged inbox_rows={} attempt_rows={} sent_notifications={}",
        purged.inbox_rows,
        purged.attempt_rows,
        purged.sent_notifications
    )?;
    Ok(ExitCode::SUCCESS)
}
