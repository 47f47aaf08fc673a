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

/// The pause needs a process of its own: the test below runs `child` (an
/// ignored test of this same binary) and watches it stop.
#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use super::Progress;

    /// How long the child may take to stop or end: a bound on a wait that
    /// only a broken `Progress` reaches, never the verdict of a good one.
    const PATIENCE: Duration = Duration::from_secs(60);

    #[test]
    #[ignore = "run in a process of its own by a_run_stops_itself_right_after_the_chosen_line"]
    fn child() {
        let progress = Progress::lines(Some(2));
        let clone = progress.clone();
        progress.report(format_args!("one"));
        clone.report(format_args!("two"));
        progress.report(format_args!("three"));
    }

    /// Polls `done` until it has an answer, killing the child if it has
    /// none within [`PATIENCE`].
    fn within_patience<T>(child: &mut Child, mut done: impl FnMut(&mut Child) -> Option<T>) -> T {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(answer) = done(child) {
                return answer;
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("the child neither stopped nor ended within {PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the child has stopped (`Some(true)`) or ended (`Some(false)`).
    /// A stopped child is not reaped by this, an ended one is.
    fn stopped_or_ended(child: &mut Child) -> Option<bool> {
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        let mut status = 0;
        // SAFETY: waitpid on our own child, with a valid status pointer.
        let found = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG | libc::WUNTRACED) };
        assert!(found == 0 || found == pid, "waitpid failed");
        (found == pid).then_some(libc::WIFSTOPPED(status))
    }

    #[test]
    fn a_run_stops_itself_right_after_the_chosen_line() {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "progress::tests::child",
                "--ignored",
                "--nocapture",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        let mut stderr = child.stderr.take().unwrap();

        let stopped = within_patience(&mut child, stopped_or_ended);
        assert!(stopped, "the child ended without stopping");
        // What it wrote before stopping, read without waiting for more.
        // SAFETY: fcntl on a pipe this process owns.
        unsafe { libc::fcntl(stderr.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let mut before = vec![0; 1024];
        let read = stderr.read(&mut before).unwrap_or(0);
        assert_eq!(String::from_utf8_lossy(&before[..read]), "one\ntwo\n");

        // SAFETY: kill on our own child.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        let status = within_patience(&mut child, |child| child.try_wait().unwrap());
        assert!(status.success(), "the child, continued: {status}");
        // SAFETY: fcntl on a pipe this process owns.
        unsafe { libc::fcntl(stderr.as_raw_fd(), libc::F_SETFL, 0) };
        let mut after = String::new();
        stderr.read_to_string(&mut after).unwrap();
        assert_eq!(after, "three\n");
    }
}
