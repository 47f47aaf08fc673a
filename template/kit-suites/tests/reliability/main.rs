//! Reliability: the promise is "effectively once" whatever happens, and
//! these tests try hard to break it. Each file is one kind of trouble:
//!
//! * `poison`: a message that always fails is dead-lettered, never blocks
//!   the others, and can be re-driven;
//! * `retention`: purging old inbox rows keeps recent duplicates caught and
//!   loses nothing while deliveries run;
//! * `faults`: the database failing under the consumer (full, read-only,
//!   connection killed, timeouts) fails the batch cleanly, and processing
//!   resumes when the fault is gone;
//! * `schedules`: generated delivery schedules (proptest) end in the
//!   once-only state, and known-broken implementations are caught;
//! * `hostile`: bad input is rejected line by line, nothing valid is lost;
//! * `fixtures`: the benchmarks' databases have none of the tests'
//!   tripwires, and the tests' databases keep theirs;
//! * `fuzz`: the envelope parser and line reader never panic;
//! * `crash`: `run` killed with SIGKILL again and again, then finished;
//! * `pipes`: every command that prints exits quietly on a closed stdout;
//! * `metrics`: what `--metrics-addr` serves agrees with the summary line;
//! * `otlp`: `--otlp-endpoint` exports the run's spans, in the producer's
//!   trace, before the process exits;
//! * `safety`: SQL only through bound parameters, no secrets in logs;
//! * `seed`: a consumer's state set up from a file of SQL, all or nothing;
//! * `upgrade`: a database made before a column was added gets it;
//! * `examples`: the example consumers' own tests, by number, beside the
//!   required tests every project runs.
//!
//! Longer runs are opt-in: `CRASH_KILLS=200`, `FUZZ_CASES=1000000`,
//! `PROPTEST_CASES=5000` (see the README).

#[path = "../support/mod.rs"]
mod support;

#[path = "../kit/mod.rs"]
mod kit;

use std::process::{Command, Output};

use support::database::Fixture;

/// The consumer binary, pointed at `fixture`'s database.
fn consumer(fixture: &Fixture) -> Command {
    consumer_on(&fixture.cli_args())
}

/// The consumer binary, pointed at a database by `args`.
fn consumer_on(args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"));
    command.args(args);
    command
}

/// Runs the consumer on `fixture` with `args` and waits for it.
fn run_consumer(fixture: &Fixture, args: &[&str]) -> Output {
    consumer(fixture)
        .args(args)
        .output()
        .expect("run the consumer")
}

mod crash;
mod examples;
{% if database == "postgres" -%}
#[path = "faults_postgres.rs"]
{%- else -%}
#[path = "faults_sqlite.rs"]
{%- endif %}
mod faults;
mod fixtures;
mod fuzz;
mod hostile;
mod metrics;
mod otlp;
mod pipes;
mod poison;
/// The harness's second process (the examples' restart and rules across
/// messages run one), as the required tests declare it.
#[path = "../conformance/restart.rs"]
mod restart;
mod retention;
mod safety;
mod schedules;
mod seed;
mod upgrade;
