//! Signalling a process at a point of its own progress, not of the clock.
//!
//! A kill timed by a sleep lands wherever the machine's speed puts it: on
//! a fast machine after the work is done, on a slow one before it started.
//! And a kill that follows a progress line still races the process: when
//! the line was one of the last, the process may end before the signal.
//! So the process is *held* at the chosen point: started with
//! `--pause-after-progress K`, it stops itself (SIGSTOP) right after its
//! K-th progress line, and stays stopped until it is killed or continued.
//! Every kill then lands mid-run, on any machine, loaded or not, and a
//! process that ended before it could be held is reported, never signalled.
//! Every process-kill test uses this helper.
//!
//! A process a test starts is [`Running`] until the test has stopped it:
//! if the test fails first, the process is killed with it. A `consume` or
//! a relay left running would otherwise go on taking the messages and rows
//! of the tests after it (once, in CI, one failure became four that way).

use std::io::{BufRead, BufReader, Lines, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;

/// How a signalled run went.
#[derive(Debug)]
pub struct Signalled {
    /// Progress lines read before the signal.
    pub progress_seen: u64,
    /// Whether the process was held at the chosen point, alive, when it
    /// was signalled.
    pub landed_mid_run: bool,
    pub status: ExitStatus,
    pub stdout: String,
    /// What the process printed on stderr besides progress lines.
    pub other_output: String,
}

/// A child process that is killed and reaped if it is dropped still
/// running: when the test that started it fails before stopping it.
pub struct Running(Option<Child>);

impl Running {
    /// Starts `command`.
    pub fn start(command: &mut Command) -> Self {
        Self(Some(command.spawn().expect("start the process")))
    }

    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("held until dropped or taken")
    }

    /// The child, no longer killed on drop: for a test that waits for it
    /// to end by itself (`wait_with_output`).
    pub fn into_child(mut self) -> Child {
        self.0.take().expect("held until dropped or taken")
    }
}

impl Drop for Running {
    /// Kills the child only if it is still ours and running: one already
    /// reaped is never signalled, since its pid may belong to another
    /// process now (std knows of a `wait`; a `waitpid` behind its back, in
    /// [`Held`], takes the child out of the guard first).
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut()
            && matches!(child.try_wait(), Ok(None))
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A process stopped right after one of its progress lines.
pub struct Held {
    child: Running,
    stdout: JoinHandle<String>,
    stderr: Lines<BufReader<ChildStderr>>,
    marker: String,
    progress_seen: u64,
    other_output: String,
}

/// Starts `command` with `--pause-after-progress after` and waits until it
/// has stopped itself right after the `after`-th line of its stderr that
/// starts with `marker`. If it ends before that, returns how it ended.
pub fn hold_at_progress(mut command: Command, marker: &str, after: u64) -> Result<Held, Signalled> {
    let child = command
        .args(["--pause-after-progress", &after.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Running::start(child);
    let stdout = collect(child.child().stdout.take().expect("piped stdout"));
    let mut held = Held {
        stderr: BufReader::new(child.child().stderr.take().expect("piped stderr")).lines(),
        child,
        stdout,
        marker: marker.to_owned(),
        progress_seen: 0,
        other_output: String::new(),
    };
    while held.progress_seen < after {
        if !held.read_line() {
            // Its stderr closed before the line: it ended on its own.
            return Err(held.finish(false));
        }
    }
    match wait_until_stopped(held.child.child()) {
        None => Ok(held),
        Some(status) => Err(held.finish_with(false, status)),
    }
}

/// Holds `command` at its `after`-th progress line and kills it there.
pub fn kill_at_progress(command: Command, marker: &str, after: u64) -> Signalled {
    match hold_at_progress(command, marker, after) {
        Ok(held) => held.kill(),
        Err(ended) => ended,
    }
}

/// Holds `command` at its `after`-th progress line, sends it `signal`,
/// lets it go on so that it can handle the signal, and waits for its end.
pub fn signal_at_progress(command: Command, marker: &str, after: u64, signal: i32) -> Signalled {
    match hold_at_progress(command, marker, after) {
        Ok(held) => held.signal_and_go_on(signal),
        Err(ended) => ended,
    }
}

impl Held {
    /// Kills the held process (SIGKILL needs no continuing) and waits for it.
    pub fn kill(mut self) -> Signalled {
        send(self.child.child(), libc::SIGKILL);
        self.finish(true)
    }

    /// Sends `signal`, then SIGCONT so the process handles it, and waits for
    /// its end.
    pub fn signal_and_go_on(mut self, signal: i32) -> Signalled {
        send(self.child.child(), signal);
        send(self.child.child(), libc::SIGCONT);
        self.finish(true)
    }

    /// Reads one stderr line; `false` once stderr is closed.
    fn read_line(&mut self) -> bool {
        match self.stderr.next() {
            Some(Ok(line)) if line.starts_with(&self.marker) => self.progress_seen += 1,
            Some(Ok(line)) => {
                self.other_output.push_str(&line);
                self.other_output.push('\n');
            }
            Some(Err(_)) | None => return false,
        }
        true
    }

    fn finish(mut self, landed_mid_run: bool) -> Signalled {
        while self.read_line() {}
        let status = self.child.child().wait().expect("reap the process");
        self.finish_with(landed_mid_run, status)
    }

    /// `status` is the process's, already reaped.
    fn finish_with(mut self, landed_mid_run: bool, status: ExitStatus) -> Signalled {
        // Reaped, perhaps behind std's back (`waitpid`): its pid is no
        // longer its own, so nothing may signal it on drop.
        drop(self.child.0.take());
        while self.read_line() {}
        Signalled {
            progress_seen: self.progress_seen,
            landed_mid_run,
            status,
            stdout: self.stdout.join().expect("stdout reader"),
            other_output: self.other_output,
        }
    }
}

/// Sends `signal` to a running `child` and waits for it to end, collecting
/// what it printed (its stdout and stderr must be piped). For processes
/// that run until told to stop.
pub fn stop_and_collect(mut child: Running, marker: &str, signal: i32) -> Signalled {
    send(child.child(), signal);
    let stdout = collect(child.child().stdout.take().expect("piped stdout"));
    let held = Held {
        stderr: BufReader::new(child.child().stderr.take().expect("piped stderr")).lines(),
        child,
        stdout,
        marker: marker.to_owned(),
        progress_seen: 0,
        other_output: String::new(),
    };
    held.finish(true)
}

/// Blocks until `child` has stopped (`None`) or ended (its status: it is
/// then reaped, and must not be waited for again).
fn wait_until_stopped(child: &Child) -> Option<ExitStatus> {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child; WUNTRACED also reports a stop.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
        if waited == pid {
            if libc::WIFSTOPPED(status) {
                return None;
            }
            return Some(ExitStatus::from_raw(status));
        }
        let error = std::io::Error::last_os_error();
        assert_eq!(
            error.kind(),
            std::io::ErrorKind::Interrupted,
            "waitpid: {error}"
        );
    }
}

fn collect(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

/// Sends `signal` to a child that has not been reaped: it is running,
/// stopped, or a zombie, and its pid is still its own.
fn send(child: &Child, signal: i32) {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: signals our own child, which has not been reaped yet.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(sent, 0, "could not signal the process");
}
