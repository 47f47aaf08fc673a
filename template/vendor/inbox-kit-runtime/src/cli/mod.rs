//! What every consumer's command line shares, whatever its handlers
//! (feature `cli`): the commands themselves ([`command::Command`]: `run`,
//! `consume` with a broker feature, `seed`, `dead-letters`, `purge`,
//! `relay`, `migrate`), what they need of a project
//! ([`consumer::Consumer`]), printing to a pipe that may close
//! ([`output`]), the options that let scripts and tests follow a run
//! ([`progress`]), serving [`metrics`] while a command runs, where the
//! process reports what it does: logs, and traces over OTLP
//! ([`telemetry`]), and mistakes found while a command runs ([`usage`]).
//!
//! A project's `main` implements `Consumer` and flattens `Command` into
//! its own subcommands (the commands of its own handlers, such as
//! `open-account`).

pub mod broker;
pub mod command;
pub mod consumer;
pub mod dead_letters;
pub mod metrics;
pub mod output;
pub mod progress;
pub mod purge;
pub mod relay;
pub mod run;
pub mod seed;
pub mod telemetry;
pub mod usage;
pub mod work;
