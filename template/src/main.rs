//! The consumer's command line. See `cli` for the commands and `lib.rs` for
//! how the consumer works.
//!
//! `main` is synchronous: the database clients block, so only `run` starts
//! an async runtime, for the parts that wait (signals, a broker).

mod cli;

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use {{crate_name}}::database;

fn main() -> ExitCode {
    let mut filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    for quiet in database::QUIET_LOGS {
        filter = filter.add_directive(quiet.parse().expect("a valid directive"));
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match cli::Cli::parse().execute() {
        Ok(code) => code,
        Err(error) => cli::output::exit_for_closed_output(&error).unwrap_or_else(|| {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }),
    }
}
