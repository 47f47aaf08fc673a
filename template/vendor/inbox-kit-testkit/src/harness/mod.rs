//! The parts of a consumer's conformance harness that do not depend on
//! its database: what "effectively once" means ([`judge`]), the knobs and
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
