//! `seed`: a consumer's own state (the rows its messages need to exist
//! first: an account, a stock level) set up from a file of SQL, in one
//! transaction. Every consumer can be run against a real database without
//! a command of its own; `open-account` is the same for `debit`, by hand.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::output::outln;
use {{crate_name}}::database::DatabaseOptions;

/// Run the SQL statements in FILE in one transaction, after creating the
/// missing tables: the rows a consumer needs before its messages can apply.
/// A statement that fails rolls every one of them back.
#[derive(Args)]
pub struct SeedArgs {
    /// A file of SQL statements separated by `;`, or `-` for standard input.
    file: PathBuf,
}

pub fn seed(args: SeedArgs, database: &DatabaseOptions) -> anyhow::Result<ExitCode> {
    let sql = read(&args.file);
    database
        .open()?
        .execute_script(&sql)
        .with_context(|| format!("seed {}: nothing was applied", args.file.display()))?;
    outln!("seeded from {}", args.file.display())?;
    Ok(ExitCode::SUCCESS)
}

/// The file's text; a file that cannot be read is a usage error.
fn read(file: &std::path::Path) -> String {
    let read = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(file)
    };
    read.unwrap_or_else(|error| {
        super::usage_error(format!("cannot read {}: {error}", file.display()))
    })
}
