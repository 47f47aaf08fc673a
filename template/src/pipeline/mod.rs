//! `run`: read deliveries, hand them to workers, count what happened.
//!
//! ```text
//! input ──▶ reader ──(bounded queue)──▶ worker 1 ─┐
//!             │                         worker 2 ─┼─▶ one SQLite file
//!             ▼                         worker N ─┘
//!          rejects
//! ```
//!
//! The reader parses each line; a bad line is reported with its number and
//! the run goes on. Each worker owns one connection and takes messages in
//! batches, bounded by count and by time, so a busy input commits rarely
//! and a quiet one still commits within a few milliseconds. Progress moves
//! only after a batch commits: that is the point where a broker consumer
//! would acknowledge. The queue is bounded, so memory stays flat however
//! large the input is.
//!
//! Both the reader and the workers do blocking I/O, so they run on tokio's
//! blocking pool; the async side only waits for them and for Ctrl-C.

mod lines;
mod rejects;
mod summary;

pub use lines::{Line, Lines};
pub use rejects::Rejects;
pub use summary::Summary;

use std::collections::VecDeque;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use crossbeam_channel::{Receiver, Sender};
use indicatif::ProgressBar;

use crate::envelope::{Rejection, parse_line};
use crate::handler::Handler;
use crate::inbox::{Delivery, Inbox, StorageError};
use crate::message::Message;

/// The longest input line accepted, in bytes.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Messages per transaction unless told otherwise. Best of three runs of the
/// `run` binary on the benchmark's 200,000 lines, one worker: 64 gave about
/// 240,000 deliveries/s, 256 about 310,000/s; larger batches added little
/// and hold the write lock longer. (BENCHMARKS.md has the full table.)
pub const DEFAULT_BATCH_SIZE: u16 = 256;

/// Longest wait for a batch to fill, in milliseconds, unless told otherwise:
/// the latency a quiet input pays for batching.
pub const DEFAULT_BATCH_WAIT_MS: u16 = 5;

/// How each line of `--progress-lines` starts.
pub const PROGRESS_LINE: &str = "progress: committed a batch";

/// How a run is spread over workers and transactions.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Worker threads, each with its own database connection.
    pub workers: usize,
    /// The most messages one transaction takes.
    pub batch_size: usize,
    /// How long a worker waits for a batch to fill before committing what it
    /// has.
    pub batch_wait: Duration,
    /// Print a line on stderr after every committed batch, for scripts and
    /// tests that follow a run's progress (the crash test kills `run` at
    /// such points).
    pub progress_lines: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workers: usize::from(crate::defaults::WORKERS),
            batch_size: usize::from(DEFAULT_BATCH_SIZE),
            batch_wait: Duration::from_millis(u64::from(DEFAULT_BATCH_WAIT_MS)),
            progress_lines: false,
        }
    }
}

/// A parsed message waiting for a worker.
struct Job {
    message: Message,
    /// Input bytes this job accounts for (for progress).
    size: usize,
}

/// The reader hands jobs to workers in chunks of up to this many: one
/// queue operation per chunk instead of per message. A chunk also goes out
/// as soon as reading on would have to wait for more input, so a slow
/// producer on stdin adds no delay.
const CHUNK: usize = 64;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub summary: Summary,
    /// Ctrl-C stopped the run before the end of its input.
    pub interrupted: bool,
}

/// Processes every line of `input` and returns the counts.
///
/// `open_inbox` is called once per worker, on the worker's thread.
pub async fn run<I, F>(
    input: Box<dyn Read + Send>,
    handlers: Vec<Arc<dyn Handler>>,
    open_inbox: F,
    options: Options,
    rejects: Rejects,
    progress: ProgressBar,
) -> anyhow::Result<Report>
where
    I: Inbox + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let workers = options.workers.max(1);
    let (chunks_in, chunks_out) = crossbeam_channel::bounded(workers * 4);
    let stop = Arc::new(AtomicBool::new(false));
    let interrupt = tokio::spawn(stop_on_ctrl_c(stop.clone()));
    let open_inbox = Arc::new(open_inbox);
    let handlers = Arc::new(handlers);

    let workers: Vec<_> = (0..workers)
        .map(|_| {
            let (chunks, open_inbox, handlers, progress) = (
                chunks_out.clone(),
                open_inbox.clone(),
                handlers.clone(),
                progress.clone(),
            );
            tokio::task::spawn_blocking(move || -> anyhow::Result<Summary> {
                let inbox =
                    open_inbox().context("could not open a worker's database connection")?;
                Ok(work(inbox, &chunks, &handlers, options, &progress))
            })
        })
        .collect();
    drop(chunks_out);

    let reader = tokio::task::spawn_blocking({
        let (progress, stop) = (progress.clone(), stop.clone());
        move || read(input, &chunks_in, rejects, &stop, &progress)
    });

    let mut summary = reader.await??;
    for worker in workers {
        summary += worker.await??;
    }
    interrupt.abort();
    progress.finish_and_clear();
    Ok(Report {
        summary,
        interrupted: stop.load(Ordering::Relaxed),
    })
}

/// First Ctrl-C: stop reading, finish what was read, report. Second Ctrl-C
/// (the reader may be blocked on a quiet stdin): exit at once. Either way
/// nothing is lost: committed deliveries are in the inbox, and the rest
/// were never acknowledged, so they come again.
async fn stop_on_ctrl_c(stop: Arc<AtomicBool>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    eprintln!("interrupted: finishing the deliveries already read (Ctrl-C again to quit now)");
    stop.store(true, Ordering::Relaxed);
    if tokio::signal::ctrl_c().await.is_ok() {
        eprintln!("interrupted twice: quitting; uncommitted deliveries will be redelivered");
        std::process::exit(130);
    }
}

/// The reader: parses lines, queues messages in chunks, reports rejections.
fn read(
    input: Box<dyn Read + Send>,
    chunks: &Sender<Vec<Job>>,
    mut rejects: Rejects,
    stop: &AtomicBool,
    progress: &ProgressBar,
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    let mut lines = Lines::new(input, MAX_LINE_BYTES);
    let mut chunk = Vec::with_capacity(CHUNK);
    let send = |chunk: Vec<Job>| {
        chunks
            .send(chunk)
            .map_err(|_| anyhow::anyhow!("every worker stopped before the input was read"))
    };
    while !stop.load(Ordering::Relaxed) {
        if !chunk.is_empty() && (chunk.len() >= CHUNK || lines.must_wait_for_input()) {
            send(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)))?;
        }
        let Some((number, line, size)) = lines
            .next_line()
            .with_context(|| "could not read the input")?
        else {
            break;
        };
        let parsed = match line {
            Line::Text(text) if text.iter().all(u8::is_ascii_whitespace) => {
                progress.inc(size as u64);
                continue;
            }
            Line::Text(text) => parse_line(text).map_err(|reason| (reason, Some(text))),
            Line::TooLong => Err((
                Rejection::TooLong {
                    limit: MAX_LINE_BYTES,
                },
                None,
            )),
        };
        match parsed {
            Ok(message) => chunk.push(Job { message, size }),
            Err((reason, text)) => {
                summary.rejected += 1;
                let text = text.map(String::from_utf8_lossy);
                rejects
                    .reject(number, &reason.to_string(), text.as_deref())
                    .context("could not write a rejected line")?;
                progress.inc(size as u64);
            }
        }
    }
    if !chunk.is_empty() {
        send(chunk)?;
    }
    rejects.flush().context("could not write rejected lines")?;
    Ok(summary)
}

/// A worker: commits batches until the queue is closed and drained.
fn work<I: Inbox>(
    mut inbox: I,
    chunks: &Receiver<Vec<Job>>,
    handlers: &[Arc<dyn Handler>],
    options: Options,
    progress: &ProgressBar,
) -> Summary {
    let mut summary = Summary::default();
    let mut queued = VecDeque::new();
    let mut batch = Vec::with_capacity(options.batch_size);
    while next_batch(chunks, &mut queued, &mut batch, options) {
        let deliveries: Vec<Delivery<'_>> = batch
            .iter()
            .flat_map(|job| {
                handlers
                    .iter()
                    .filter(|handler| handler.subscribes_to(&job.message.event))
                    .map(|handler| Delivery {
                        handler: handler.as_ref(),
                        message: &job.message,
                    })
            })
            .collect();
        match inbox.deliver_batch(&deliveries) {
            Ok(outcomes) => {
                outcomes.iter().for_each(|outcome| summary.count(outcome));
                if options.progress_lines {
                    eprintln!("{PROGRESS_LINE} deliveries={}", outcomes.len());
                }
            }
            Err(error) => {
                tracing::error!(%error, deliveries = deliveries.len(), "batch rolled back; its messages apply on redelivery");
                summary.failed += deliveries.len() as u64;
            }
        }
        progress.inc(batch.iter().map(|job| job.size as u64).sum());
    }
    summary
}

/// Fills `batch` with up to `batch_size` jobs: those already queued locally
/// first, then chunks from the reader, waiting at most `batch_wait` once the
/// batch has its first job. `false` once the reader is done and nothing is
/// left.
fn next_batch(
    chunks: &Receiver<Vec<Job>>,
    queued: &mut VecDeque<Job>,
    batch: &mut Vec<Job>,
    options: Options,
) -> bool {
    batch.clear();
    let mut deadline = None;
    while batch.len() < options.batch_size {
        if let Some(job) = queued.pop_front() {
            batch.push(job);
            deadline.get_or_insert_with(|| Instant::now() + options.batch_wait);
            continue;
        }
        let received = match deadline {
            None => chunks.recv().ok(),
            Some(deadline) => chunks.recv_deadline(deadline).ok(),
        };
        match received {
            Some(chunk) => queued.extend(chunk),
            None => break,
        }
    }
    !batch.is_empty()
}
