//! Progress lines: how scripts and tests follow a long run from outside.
//!
//! With `--progress-lines`, `run` and `consume` print a line on stderr after
//! every committed batch, and `relay send` after every batch it sent and
//! before it marks it. A test that wants to kill a process at such a point
//! must not race it: on a fast machine the process may finish before the
//! signal arrives, and the kill lands nowhere. So `--pause-after-progress
//! K` stops the whole process (SIGSTOP, as Ctrl-Z does) right after its
//! K-th line: it stays exactly there, however loaded the machine, until it
//! is killed or continued (`kill -CONT`, or `fg` in a shell).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a run reports its progress: nowhere (the default), or lines on
/// stderr. Clones share one count, so "the K-th line" is counted across
/// every worker of the process.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    lines: Option<Arc<Lines>>,
}

#[derive(Debug)]
struct Lines {
    pause_after: Option<u64>,
    printed: AtomicU64,
}

impl Progress {
    /// Lines on stderr; with `pause_after`, the process stops itself right
    /// after that many lines.
    pub fn lines(pause_after: Option<u64>) -> Self {
        Self {
            lines: Some(Arc::new(Lines {
                pause_after,
                printed: AtomicU64::new(0),
            })),
        }
    }

    /// Prints `line` if progress lines are on, then pauses the process if
    /// it was the line to pause after.
    pub fn report(&self, line: std::fmt::Arguments<'_>) {
        let Some(lines) = &self.lines else {
            return;
        };
        note(line);
        let printed = lines.printed.fetch_add(1, Ordering::SeqCst) + 1;
        if lines.pause_after == Some(printed) {
            pause();
        }
    }
}

/// Writes `line` to stderr, and nothing when it cannot: a closed stderr (a
/// log pipe whose reader went away) must not panic a worker that reports
/// progress, or the task that stops the run on a signal, as `eprintln!`
/// would.
pub fn note(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Stops this process until it receives SIGCONT (or is killed).
#[cfg(unix)]
fn pause() {
    // SAFETY: raise() only sends a signal to this process; SIGSTOP cannot
    // be caught, so no handler of ours runs.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

/// No job control here: the run goes on.
#[cfg(not(unix))]
fn pause() {
    tracing::warn!("--pause-after-progress needs a Unix system; not pausing");
}
