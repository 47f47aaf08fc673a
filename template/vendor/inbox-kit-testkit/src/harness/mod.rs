//! The parts of a consumer's conformance harness written once for every
//! project: what a project shows the harness of itself ([`project`]), the
//! contract of a handler under test ([`subject`]), what "effectively
//! once" means ([`judge`]), the knobs and
//! the seeded generator every scenario uses ([`mod@env`]), and handlers
//! wrapped to fail on purpose ([`faults`]), and the watchdog that turns a
//! hang into a failure ([`hangs`]).
//!
//! Written for any project's events `E` and tables `T`: a wrapper is a
//! handler of whatever the handler it wraps handles, so a project's
//! `Arc<AnyHandler>` wraps into another `Arc<AnyHandler>`.

pub mod env;
pub mod faults;
pub mod hangs;
pub mod judge;
pub mod project;
pub mod subject;

pub use judge::{
    Expected, Observed, Play, Violation, applied_once_problems, assert_applied_once, distinct,
    observe, state_against, state_of,
};
pub use project::{Fixture, Project, Scratch};
pub use subject::{EventOf, Model, Seed, Subject, TablesOf, facts};
