//! Printing to standard output without panicking when nobody reads it.
//!
//! `println!` panics when stdout is a closed pipe (`status | head -1`, a
//! pager quit early), with a backtrace. Commands print through [`outln!`]
//! instead: it returns the write error, and `main` ends the process quietly
//! with the shell's code for a closed pipe when that is the error.

use std::process::ExitCode;

use crate::relay::RelayError;

/// Like `println!`, but returns an `io::Result` instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::output::write_line(format_args!($($arg)*))
    };
}
pub use crate::outln;

/// Writes `line` and a line break to stdout.
pub fn write_line(line: std::fmt::Arguments<'_>) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_fmt(line)?;
    out.write_all(b"\n")
}

/// What a shell reports for a command whose output pipe was closed
/// (128 + SIGPIPE).
pub const CLOSED_OUTPUT: u8 = 141;

/// The quiet exit for `error`, if it is a closed output: stdout's pipe, or
/// the relay's output.
pub fn exit_for_closed_output(error: &anyhow::Error) -> Option<ExitCode> {
    let closed = error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || matches!(cause.downcast_ref(), Some(RelayError::SinkClosed(_)))
    });
    closed.then_some(ExitCode::from(CLOSED_OUTPUT))
}
