//! The parts of a consumer's conformance harness written once for every
//! project: what a project shows the harness of itself ([`project`]), the
//! contract of a handler under test ([`subject`]), what "effectively
//! once" means ([`judge`]), the required delivery schedules
//! ([`scenarios`]), what they deliver through ([`inboxes`], [`deliver`]),
//! the faults a fixture sets off on demand ([`tripwires`]), the knobs and
//! the seeded generator every scenario uses ([`mod@env`]),
//! handlers wrapped to fail on purpose ([`faults`]), and the watchdog that
//! turns a hang into a failure ([`hangs`]).
//!
//! Written for any [`Project`]: its events, its tables and its registry's
//! handlers ([`HandlerOf`]). A fault wrapper is a handler of whatever the
//! handler it wraps handles, so a project's `Arc<AnyHandler>` wraps into
//! another handler of the same project.

pub mod deliver;
pub mod env;
pub mod faults;
pub mod hangs;
pub mod inboxes;
pub mod judge;
pub mod project;
pub mod scenarios;
pub mod subject;
pub mod tripwires;

pub use deliver::{
    Fault, applied_facts, deliver_all, deliver_mixed, each_at_once, fixture_for, play_through_fault,
};
pub use inboxes::{DeadLettersUnderTest, InboxUnderTest, OnPath, Path, RealDeadLetters, RealInbox};
pub use judge::{
    Expected, Observed, Play, PlayOf, Violation, applied_once_problems, assert_applied_once,
    distinct, observe, state_against, state_of,
};
pub use project::{
    AnyHandlerOf, Fixture, HandlerOf, InboxWithLetters, LettersOf, Project, Raw, Scratch,
    apply_alone,
};
pub use subject::{EventOf, Model, Seed, Subject, TablesOf, facts};
pub use tripwires::{Conflicts, HeldClaim, Tripwires};
