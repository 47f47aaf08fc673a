//! The consumer's command line. See `cli` for the commands and `lib.rs` for
//! how the consumer works.
//!
//! `main` is synchronous: the database clients block, so only `run` starts
//! an async runtime, for the parts that wait (signals, a broker).

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::telemetry::Telemetry;

use {{crate_name}}::database;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let service = env!("CARGO_CRATE_NAME");
    let outcome = Telemetry::init(cli.otlp_endpoint(), service, &database::QUIET_LOGS).and_then(
        |telemetry| {
            let executed = cli.execute();
            drop(telemetry);
            executed
        },
    );
    match outcome {
        Ok(code) => code,
        Err(error) => cli::output::exit_for_closed_output(&error)
            .or_else(|| cli::usage::exit_for_usage_error::<cli::Cli>(&error))
            .unwrap_or_else(|| {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }),
    }
}
