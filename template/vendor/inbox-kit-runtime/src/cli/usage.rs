//! Mistakes on the command line found by a command while it runs (a
//! consumer name nobody has, a file that cannot be read): reported the way
//! clap reports the ones it finds, with exit code 2, and nothing done.

use std::process::ExitCode;

/// A mistake in what the command was asked to do; nothing was done.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Reports `error` the way clap reports a usage error of `C` (exit code
/// 2), if it is a [`UsageError`]; returns only if it is not.
pub fn exit_for_usage_error<C: clap::CommandFactory>(error: &anyhow::Error) -> Option<ExitCode> {
    let usage = error.downcast_ref::<UsageError>()?;
    C::command()
        .error(clap::error::ErrorKind::ValueValidation, &usage.0)
        .exit()
}
