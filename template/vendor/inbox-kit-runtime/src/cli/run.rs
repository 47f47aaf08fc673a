//! `run`: process JSON-lines deliveries from a file or standard input.

use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::consumer::{Consumer, OpenStore};
use super::output::outln;
use super::work::WorkArgs;
use crate::envelope::Wire;
use crate::handler::Registry;
use crate::pipeline::Summary;
use crate::source::lines::{LinesSource, Rejects};
use crate::store::Store;

/// Process JSON-lines deliveries from a file or standard input.
///
/// Each line is {"id": ..., "type": ..., "payload": {...}}; `id` is fixed by
/// the sender and reused on resends. Every consumer subscribed to the type
/// gets the message once, however often it appears. Prints one summary line
/// at the end. Exit code: 0 all applied or duplicate, 3 some lines rejected,
/// 4 some deliveries failed, were dead-lettered or were refused by their
/// handler (run the input again to retry failures; see `dead-letters`), 5
/// both, 130 interrupted by Ctrl-C or SIGTERM.
#[derive(Args)]
pub struct RunArgs<C: Consumer> {
    /// Input file; `-` or nothing reads standard input.
    input: Option<PathBuf>,
    /// Write rejected lines as JSON lines to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    rejects: Option<PathBuf>,
    #[command(flatten)]
    work: WorkArgs<C>,
}

/// Runs the deliveries `args` name through the consumers of `C`.
pub fn run<C: Consumer>(args: RunArgs<C>, database: &C::Options) -> anyhow::Result<ExitCode>
where
    <<C::Store as Store>::Registry as Registry>::Event: Wire + Send + 'static,
{
    let consumers = args.work.consumers(database)?;
    let database = database.open()?;
    let (input, length) = open_input(args.input.as_ref())?;
    let progress = progress_bar(length);
    let rejects = match &args.rejects {
        Some(path) => Rejects::to_json_lines(
            File::create(path).with_context(|| format!("could not create {}", path.display()))?,
        ),
        None => Rejects::to_stderr(progress.clone()),
    };
    if args
        .input
        .as_ref()
        .is_none_or(|path| path.as_os_str() == "-")
        && io::stdin().is_terminal()
    {
        eprintln!("reading deliveries from standard input, one JSON object per line (Ctrl-D ends)");
    }
    let source = Box::new(LinesSource::new(input, rejects, progress.clone()));
    let runtime = tokio::runtime::Runtime::new().context("could not start the runtime")?;
    let report = runtime.block_on(args.work.deliver(source, consumers, database, None))?;
    progress.finish_and_clear();
    outln!("{}", report.summary)?;
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

/// What a run's summary means to a shell: see `run --help`.
pub fn exit_code(summary: &Summary) -> ExitCode {
    let failed = summary.failed + summary.dead_lettered + summary.refused > 0;
    match (summary.rejected > 0, failed) {
        (false, false) => ExitCode::SUCCESS,
        (true, false) => ExitCode::from(3),
        (false, true) => ExitCode::from(4),
        (true, true) => ExitCode::from(5),
    }
}
