//! Killing a process at a point of its own progress, not of the clock.
//!
//! A kill timed by a sleep lands wherever the machine's speed puts it: on
//! a fast machine after the work is done, on a slow one before it started.
//! Instead the process prints a line at every point of progress (`run
//! --progress-lines` prints one per committed batch), and the kill follows
//! the chosen line, so it lands mid-run on any machine, in any profile,
//! loaded or not.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// How a kill went.
#[derive(Debug)]
pub struct Kill {
    /// Progress lines read before the kill.
    pub progress_seen: u64,
    /// Whether the process was still running when it was killed.
    pub landed_mid_run: bool,
    /// What the process printed on stderr besides progress lines (for
    /// diagnosing a process that ended on its own).
    pub other_output: String,
}

/// Starts `command`, reads its stderr, and sends SIGKILL right after the
/// `after`-th line that starts with `marker`. If the process ends first,
/// the kill did not land mid-run; the caller decides what that means.
pub fn kill_after_progress(mut command: Command, marker: &str, after: u64) -> Kill {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the process");
    let stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut progress_seen = 0;
    let mut other_output = String::new();
    let mut lines = stderr.lines();
    let mut landed_mid_run = false;
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
            child.kill().expect("SIGKILL");
            break;
        }
    }
    child.wait().expect("reap the process");
    for line in lines.map_while(Result::ok) {
        other_output.push_str(&line);
        other_output.push('\n');
    }
    Kill {
        progress_seen,
        landed_mid_run,
        other_output,
    }
}
