//! JSON lines from a file or standard input: a source with no broker.
//!
//! Each line is parsed on the reader's thread; a bad line is reported with
//! its number (see `rejects.rs`) and the run goes on. "Acknowledging" a
//! line moves the progress bar: a file cannot redeliver, so running the
//! same file again is how failed deliveries are retried.

mod rejects;

pub use rejects::Rejects;

use std::io::Read;

use anyhow::Context;
use crossbeam_channel::Sender;
use indicatif::ProgressBar;

use super::{Acknowledge, Incoming, Source, Stop, Verdict};
use crate::envelope::{Rejection, Wire, parse_line};
use crate::lines::{Line, Lines};

/// The longest input line accepted, in bytes.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The reader hands messages to workers in chunks of up to this many: one
/// queue operation per chunk instead of per message. A chunk also goes out
/// as soon as reading on would have to wait for more input, so a slow
/// producer on stdin adds no delay.
const CHUNK: usize = 64;

/// Deliveries read from JSON lines.
pub struct LinesSource {
    input: Box<dyn Read + Send>,
    rejects: Rejects,
    progress: ProgressBar,
}

impl LinesSource {
    /// Reads `input`, reports bad lines to `rejects`, and moves `progress`
    /// (in bytes) as lines are settled.
    pub fn new(input: Box<dyn Read + Send>, rejects: Rejects, progress: ProgressBar) -> Self {
        Self {
            input,
            rejects,
            progress,
        }
    }
}

/// A line's share of the progress bar.
struct LineRead {
    size: u64,
    progress: ProgressBar,
}

impl Acknowledge for LineRead {
    fn settle(self: Box<Self>, _verdict: Verdict) {
        self.progress.inc(self.size);
    }
}

impl<E: Wire + Send + 'static> Source<E> for LinesSource {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming<E>>>, stop: &Stop) -> anyhow::Result<u64> {
        let Self {
            input,
            mut rejects,
            progress,
        } = *self;
        let mut rejected = 0;
        let mut lines = Lines::new(input, MAX_LINE_BYTES);
        let mut chunk = Vec::with_capacity(CHUNK);
        let send = |chunk: Vec<Incoming<E>>| {
            chunks
                .send(chunk)
                .map_err(|_| anyhow::anyhow!("every worker stopped before the input was read"))
        };
        while !stop.is_raised() {
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
                Ok(message) => chunk.push(Incoming {
                    message,
                    delivered: 1,
                    ack: Box::new(LineRead {
                        size: size as u64,
                        progress: progress.clone(),
                    }),
                }),
                Err((reason, text)) => {
                    rejected += 1;
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
        Ok(rejected)
    }
}
