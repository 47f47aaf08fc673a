//! `seed`: a consumer's own state (the rows its messages need to exist
//! first: an account, a stock level) set up from a file of SQL, in one
//! transaction. Every consumer can be run against a real database without
//! a command of its own.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::output::outln;
use super::usage::UsageError;
use crate::store::Store;

/// Run the SQL statements in FILE in one transaction, after creating the
/// missing tables: the rows a consumer needs before its messages can apply.
/// A statement that fails rolls every one of them back.
#[derive(Args)]
pub struct SeedArgs {
    /// A file of SQL statements separated by `;`, or `-` for standard input.
    file: PathBuf,
}

/// Seeds the database that `open` opens (creating it and its tables if
/// needed), once the file was read.
pub fn seed<S: Store>(
    args: SeedArgs,
    open: impl FnOnce() -> anyhow::Result<S>,
) -> anyhow::Result<ExitCode> {
    let sql = read(&args.file)?;
    open()?
        .execute_script(&sql)
        .with_context(|| format!("seed {}: nothing was applied", args.file.display()))?;
    outln!("seeded from {}", args.file.display())?;
    Ok(ExitCode::SUCCESS)
}

/// The file's text; a file that cannot be read is a usage error.
fn read(file: &std::path::Path) -> Result<String, UsageError> {
    let read = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    };
    read.map_err(|error| UsageError(format!("cannot read {}: {error}", file.display())))
}
