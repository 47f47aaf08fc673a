//! The options that let scripts and tests follow a run: progress lines,
//! and a pause at one of them (see [`crate::progress`]).

use clap::Args;

use crate::progress::Progress;

/// Following a run from outside.
#[derive(Args)]
pub struct ProgressArgs {
    /// Print a line on stderr at each point of progress: after every
    /// committed batch (`run`, `consume`), or after every batch sent and
    /// before it is marked sent (`relay send`).
    #[arg(long)]
    progress_lines: bool,
    /// Stop the process (SIGSTOP, like Ctrl-Z) right after its K-th
    /// progress line, until it is killed or continued (`kill -CONT PID`, or
    /// `fg`). Tests use it to kill a run at an exact point. Implies
    /// --progress-lines.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pause_after_progress: Option<u64>,
}

impl ProgressArgs {
    pub fn progress(&self) -> Progress {
        if self.progress_lines || self.pause_after_progress.is_some() {
            Progress::lines(self.pause_after_progress)
        } else {
            Progress::default()
        }
    }
}
