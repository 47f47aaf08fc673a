//! What every consumer's command line shares, whatever its commands
//! (feature `cli`): printing to a pipe that may close ([`output`]), the
//! options that let scripts and tests follow a run ([`progress`]), and
//! where the process reports what it does: logs, and traces over OTLP
//! ([`telemetry`]).

pub mod output;
pub mod progress;
pub mod telemetry;
