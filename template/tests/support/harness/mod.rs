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
//! here. This file shows the project to it: [`ThisProject`], and its
//! database fixture as the test kit's `Fixture` and `Tripwires` (each
//! method the fixture's own of the same name).

mod judge;
mod scenarios;

pub use inbox_kit_testkit::harness::env::{
    Prng, env_number, now_millis, stress_messages, stress_workers,
};
pub use inbox_kit_testkit::harness::faults::{AlwaysFail, FailFirstAttempt, FailFor};
pub use inbox_kit_testkit::harness::hangs;
pub use inbox_kit_testkit::harness::{
    DeadLettersUnderTest, Expected, Fault, InboxUnderTest, InboxWithLetters, Model, Observed,
    OnPath, Path, Raw, RealDeadLetters, RealInbox, Scratch, Seed, Subject, Violation,
    applied_facts, applied_once_problems, apply_alone, assert_applied_once, deliver_all,
    deliver_mixed, distinct, each_at_once, facts, fixture_for, observe, play_through_fault,
    state_against, state_of,
};
pub use judge::Play;
pub use scenarios::*;

use std::sync::Arc;
use std::time::Duration;

use inbox_kit_testkit::harness::{Conflicts, HeldClaim, Project, Tripwires};

use {{crate_name}}::event::Event;
use {{crate_name}}::handlers::{self, AnyHandler, Handlers, Tables};
use {{crate_name}}::inbox::{DeadLetter, Inbox, Policy, StorageError};
use {{crate_name}}::store::{Purged, Store};

use crate::support::database::{CONCURRENT_WRITERS, Fixture};

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

/// What the test kit's judge reads from a fixture: the fixture's own
/// methods of the same names.
impl inbox_kit_testkit::harness::Fixture<ThisProject> for Fixture {
    const CONCURRENT_WRITERS: bool = CONCURRENT_WRITERS;

    fn new() -> Self {
        Fixture::new()
    }

    fn location(&self) -> String {
        Fixture::location(self)
    }

    fn attach(location: &str) -> Self {
        Fixture::attach(location)
    }

    fn identity(&self) -> String {
        Fixture::identity(self)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut (dyn Tables + '_)) -> Result<T, StorageError>,
    ) -> T {
        Fixture::with_tables(self, work)
    }

    fn waiting_on_locks(&self) -> usize {
        Fixture::waiting_on_locks(self)
    }

    fn inbox_rows(&self, consumer: &str) -> usize {
        Fixture::inbox_rows(self, consumer)
    }

    fn dead_letters(&self) -> Vec<DeadLetter> {
        Fixture::dead_letters(self)
    }

    fn failures_counted(&self, consumer: &str) -> u64 {
        Fixture::failures_counted(self, consumer)
    }

    fn purge(
        &self,
        older_than: Duration,
        keys_per_transaction: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        let purged = self
            .database()
            .purge(older_than, keys_per_transaction, progress);
        purged.expect("purge")
    }

    fn raw(&self) -> Box<dyn Raw<ThisProject>> {
        Fixture::raw(self)
    }

    fn raw_waiting_forever(&self) -> Box<dyn Raw<ThisProject>> {
        Fixture::raw_waiting_forever(self)
    }

    fn inbox(&self, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        Fixture::inbox(self, policy)
    }

    fn scratch<T>(work: impl FnOnce(&mut dyn Scratch<ThisProject>) -> T) -> T {
        Fixture::scratch(|scratch| work(scratch))
    }
}

/// The faults this project's fixture sets off: its own methods of the
/// same names.
impl Tripwires<Handlers> for Fixture {
    fn fail_commits(&self, on: bool) {
        Fixture::fail_commits(self, on)
    }

    fn refuse_claims(&self, message_ids: &[&str]) {
        Fixture::refuse_claims(self, message_ids)
    }

    fn heal_claims(&self) {
        Fixture::heal_claims(self)
    }

    fn hold_claim(&self, consumer: &str, id: &str) -> Box<dyn HeldClaim> {
        Box::new(Fixture::hold_claim(self, consumer, id))
    }

    fn conflicts(&self) -> Option<Box<dyn Conflicts + '_>> {
        Fixture::conflicts(self).map(|conflicts| Box::new(conflicts) as Box<dyn Conflicts + '_>)
    }

    fn impatient_inbox(&self, policy: Policy, wait: Duration) -> Box<dyn Inbox<Handlers>> {
        Fixture::impatient_inbox(self, policy, wait)
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
