//! `run`: process JSON-lines deliveries from a file or standard input.

use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use {{crate_name}}::database::DatabaseOptions;
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::pipeline::{self, Options, Rejects, Summary};
use {{crate_name}}::store::Store;
use {{crate_name}}::{defaults, handlers};

/// Process JSON-lines deliveries from a file or standard input.
///
/// Each line is {"id": ..., "type": ..., "payload": {...}}; `id` is fixed by
/// the sender and reused on resends. Every consumer subscribed to the type
/// gets the message once, however often it appears. Prints one summary line
/// at the end. Exit code: 0 all applied or duplicate, 3 some lines rejected,
/// 4 some deliveries failed or were dead-lettered (run the input again to
/// retry failures), 5 both, 130 interrupted by Ctrl-C.
#[derive(Args)]
pub struct RunArgs {
    /// Input file; `-` or nothing reads standard input.
    input: Option<PathBuf>,
    /// Worker threads, each with its own database connection.
    #[arg(long, short, default_value_t = defaults::WORKERS, value_parser = clap::value_parser!(u16).range(1..=256))]
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
    /// Print `progress: committed a batch deliveries=N` on stderr after every
    /// committed batch (for scripts and tests that follow a run).
    #[arg(long)]
    progress_lines: bool,
    /// Write rejected lines as JSON lines to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    rejects: Option<PathBuf>,
}

pub fn run(args: RunArgs, database: &DatabaseOptions) -> anyhow::Result<ExitCode> {
    if let Some(refusal) = database.refuse_workers(args.workers) {
        super::usage_error(refusal);
    }
    let consumers =
        handlers::select(&args.consumers).unwrap_or_else(|error| super::usage_error(error));
    let policy = Policy {
        max_attempts: args.max_attempts,
    };
    let database = database.open()?;
    let (input, length) = open_input(args.input.as_ref())?;
    let progress = progress_bar(length);
    let rejects = match &args.rejects {
        Some(path) => Rejects::to_json_lines(
            File::create(path).with_context(|| format!("could not create {}", path.display()))?,
        ),
        None => Rejects::to_stderr(progress.clone()),
    };
    let options = Options {
        workers: usize::from(args.workers),
        batch_size: usize::from(args.batch_size),
        batch_wait: Duration::from_millis(u64::from(args.batch_wait_ms)),
        progress_lines: args.progress_lines,
    };
    if args
        .input
        .as_ref()
        .is_none_or(|path| path.as_os_str() == "-")
        && io::stdin().is_terminal()
    {
        eprintln!("reading deliveries from standard input, one JSON object per line (Ctrl-D ends)");
    }
    let runtime = tokio::runtime::Runtime::new().context("could not start the runtime")?;
    let report = runtime.block_on(pipeline::run(
        input,
        consumers,
        move || database.inbox(policy),
        options,
        rejects,
        progress,
    ))?;
    println!("{}", report.summary);
    Ok(if report.interrupted {
        ExitCode::from(130)
    } else {
        exit_code(&report.summary)
    })
}

fn open_input(path: Option<&PathBuf>) -> anyhow::Result<(Box<dyn Read + Send>, Option<u64>)> {
    match path {
        Some(path) if path.as_os_str() != "-" => {
            let file =
                File::open(path).with_context(|| format!("could not open {}", path.display()))?;
            let length = file.metadata().ok().map(|metadata| metadata.len());
            Ok((Box::new(file), length))
        }
        _ => Ok((Box::new(io::stdin()), None)),
    }
}

/// A progress bar on stderr when it is a terminal; hidden otherwise, so
/// logs and pipes stay clean.
fn progress_bar(length: Option<u64>) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    match length {
        Some(length) => ProgressBar::new(length).with_style(
            ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} committed ({bytes_per_sec}, {eta} left)",
            )
            .expect("valid template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {bytes} committed ({bytes_per_sec})")
                .expect("valid template"),
        ),
    }
}

fn exit_code(summary: &Summary) -> ExitCode {
    let failed = summary.failed + summary.dead_lettered > 0;
    match (summary.rejected > 0, failed) {
        (false, false) => ExitCode::SUCCESS,
        (true, false) => ExitCode::from(3),
        (false, true) => ExitCode::from(4),
        (true, true) => ExitCode::from(5),
    }
}
