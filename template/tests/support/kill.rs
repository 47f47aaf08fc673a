//! Signalling a process at a point of its own progress, not of the clock.
//!
//! A kill timed by a sleep lands wherever the machine's speed puts it: on
//! a fast machine after the work is done, on a slow one before it started.
//! Instead the process prints a line at every point of progress (`run
//! --progress-lines` prints one per committed batch), and the signal
//! follows the chosen line, so it lands mid-run on any machine, in any
//! profile, loaded or not. Every process-kill test uses this helper.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};

/// How a signalled run went.
#[derive(Debug)]
pub struct Signalled {
    /// Progress lines read before the signal.
    pub progress_seen: u64,
    /// Whether the process was still running when it was signalled.
    pub landed_mid_run: bool,
    pub status: ExitStatus,
    pub stdout: String,
    /// What the process printed on stderr besides progress lines.
    pub other_output: String,
}

/// Starts `command` and sends SIGKILL right after the `after`-th line of
/// its stderr that starts with `marker`.
pub fn kill_after_progress(command: Command, marker: &str, after: u64) -> Signalled {
    signal_after_progress(command, marker, after, libc::SIGKILL)
}

/// Starts `command` and sends `signal` right after the `after`-th line of
/// its stderr that starts with `marker`, then waits for it to end. If the
/// process ends first, the signal did not land mid-run; the caller decides
/// what that means.
pub fn signal_after_progress(
    mut command: Command,
    marker: &str,
    after: u64,
    signal: i32,
) -> Signalled {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the process");
    follow(child, marker, after, signal)
}

/// Reads `child`'s stderr and signals it after the `after`-th progress line.
pub fn follow(mut child: Child, marker: &str, after: u64, signal: i32) -> Signalled {
    let stdout = child.stdout.take().expect("piped stdout");
    let collect_stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stdout).read_to_string(&mut text);
        text
    });
    let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut progress_seen = 0;
    let mut other_output = String::new();
    let mut landed_mid_run = false;
    let mut lines = stderr.lines();
    for line in lines.by_ref() {
        let Ok(line) = line else { break };
        if !line.starts_with(marker) {
            other_output.push_str(&line);
            other_output.push('\n');
            continue;
        }
        progress_seen += 1;
        if progress_seen == after {
            landed_mid_run = child.try_wait().expect("poll the process").is_none();
            send(&child, signal);
            break;
        }
    }
    for line in lines.map_while(Result::ok) {
        if !line.starts_with(marker) {
            other_output.push_str(&line);
            other_output.push('\n');
        }
    }
    let status = child.wait().expect("reap the process");
    Signalled {
        progress_seen,
        landed_mid_run,
        status,
        stdout: collect_stdout.join().expect("stdout reader"),
        other_output,
    }
}

/// Sends `signal` to a child process.
pub fn send(child: &Child, signal: i32) {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: signals our own child, which has not been reaped yet.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(sent, 0, "could not signal the process");
}
