//! The conformance harness: delivery schedules, and the judge that says
//! whether a consumer came through them "effectively once".
//!
//! A consumer is judged on three counts after every schedule (duplicates,
//! parallel workers, failures then redelivery, a restart...):
//!
//! * its state, and which messages it refused, equal the subject's
//!   **model**: written by hand as a pure function of the distinct
//!   messages, so a handler that does nothing, the wrong thing, or lets
//!   through what it must refuse fails;
//! * they equal the **once-only oracle** too: each distinct message applied
//!   once, straight through the handler, to a fresh database;
//! * the inbox holds one row per distinct message, and the outcomes add up.
//!
//! To test a handler, implement [`Subject`] for it (see `subjects.rs`: the
//! contract is the test kit's, `type Project = ThisProject`) and add it to
//! `subjects::all()`: every required scenario then runs for it.
//! Each scenario has a `play_` form that runs the schedule and reports what
//! it left behind, and a judged form that returns the same [`Play`] once it
//! passed, or the [`Violation`] that says what went wrong.
//!
//! All of that is the test kit's (`inbox_kit_testkit::harness`: the subject
//! contract, the judge and its once-only route, the required scenarios,
//! the inboxes they deliver through, the knobs and seeded generator,
//! handlers wrapped to fail on purpose, the hang watchdog), re-exported
//! here. This file shows the project to it: [`ThisProject`], whose
//! database fixture is its database's (`support::database::Fixture`).

mod judge;

pub use inbox_kit_testkit::harness::env::{
    Prng, env_number, now_millis, stress_messages, stress_workers,
};
pub use inbox_kit_testkit::harness::faults::{AlwaysFail, FailFirstAttempt, FailFor};
pub use inbox_kit_testkit::harness::hangs;
pub use inbox_kit_testkit::harness::scenarios::*;
pub use inbox_kit_testkit::harness::{
    DeadLettersUnderTest, Expected, Fault, InboxUnderTest, InboxWithLetters, Model, Observed,
    OnPath, Path, Raw, RealDeadLetters, RealInbox, Scratch, Seed, Subject, Violation,
    applied_facts, applied_once_problems, apply_alone, assert_applied_once, deliver_all,
    deliver_mixed, distinct, each_at_once, facts, fixture_for, observe, play_through_fault,
    state_against, state_of,
};
pub use judge::Play;

use std::sync::Arc;

use inbox_kit_testkit::harness::Project;

use {{crate_name}}::event::Event;
use {{crate_name}}::handlers::{self, AnyHandler, Handlers, Tables};

use crate::support::database::Fixture;

/// This project as the test kit's harness sees it: its events, the tables
/// its handlers are handed, its registry and its database fixture.
pub struct ThisProject;

impl Project for ThisProject {
    type Event = Event;
    type Tables<'t> = dyn Tables + 't;
    type Registry = Handlers;
    type Fixture = Fixture;

    fn handlers() -> Vec<Arc<AnyHandler>> {
        handlers::all()
    }
}

/// A [`Subject`] of this project: what every scenario here is written for.
/// Implement [`Subject`] (with `type Project = ThisProject;`); this follows.
pub trait LocalSubject: Subject<Project = ThisProject> {}

impl<S: Subject<Project = ThisProject>> LocalSubject for S {}

/// Inbox rows recorded for `consumer`, counted by the fixture's own SQL
/// on its own connection (a new connection per judge costs more than a
/// parallel round on PostgreSQL).
pub fn inbox_rows(fixture: &Fixture, consumer: &str) -> usize {
    fixture.inbox_rows(consumer)
}
