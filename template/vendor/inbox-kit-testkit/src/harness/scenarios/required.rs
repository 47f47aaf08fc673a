//! The required scenarios together: by name ([`Scenario`], for tests that
//! pick one from a table) and all at once for one subject
//! ([`required_scenarios`], what a project's coverage test runs for every
//! subject it has).

use crate::harness::env::{stress_messages, stress_workers};
use crate::harness::{
    InboxUnderTest, RealDeadLetters, RealInbox, Subject, Violation, each_at_once,
};

use super::*;

/// The scenarios by name, for tests that pick one from a table (the
/// database-specific traps in `teeth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    RunTwice,
    Parallel,
    Redelivery,
    Restart,
    BothConsumers,
    BusinessKey,
    ExactIds,
    FailedCommit,
}

impl Scenario {
    /// Plays this scenario, judged, with `first` as the subject (and
    /// `second` as the other consumer of the same messages).
    pub fn check<A: Subject, B: Subject<Project = A::Project>>(
        self,
        first: &A,
        second: &B,
        inbox: &dyn InboxUnderTest<A::Project>,
    ) -> Result<(), Violation> {
        match self {
            Self::RunTwice => run_twice(first, inbox, 50).map(drop),
            Self::Parallel => parallel(first, inbox, stress_workers(), stress_messages()).map(drop),
            Self::Redelivery => redeliver_after_failure(first, inbox, 20, |n| n % 2 == 0).map(drop),
            Self::Restart => restart(first, inbox, 20).map(drop),
            Self::BothConsumers => both_consumers(first, second, inbox, 20).map(drop),
            Self::BusinessKey => business_key(first, inbox, 20).map(drop),
            Self::ExactIds => exact_ids(first, inbox).map(drop),
            Self::FailedCommit => failed_commit(first, inbox, 20).map(drop),
        }
    }
}

/// Every required scenario that takes one subject, through both ways of
/// running the real inbox. Returns what was violated (nothing, for a
/// correct handler with a correct model), in the same order every run.
///
/// Each way of running the inbox plays its scenarios on a thread of its
/// own, at the same time as the others: every scenario has a fixture of
/// its own, so they cannot meet, and on PostgreSQL a scenario mostly waits
/// on the server, so playing them one after another left both cores idle
/// most of the time (the required tests' longest test, and so the Stop
/// hook's wait).
pub fn required_scenarios<S: Subject>(subject: &S) -> Vec<Violation> {
    let through_inboxes = each_at_once(&RealInbox::ALL, |inbox| inbox_scenarios(subject, inbox));
    let through_dead_letters = each_at_once(&RealDeadLetters::ALL, |inbox| {
        dead_letter_scenarios(subject, inbox)
    });
    through_inboxes
        .into_iter()
        .chain(through_dead_letters)
        .flatten()
        .collect()
}

/// The required scenarios through `inbox`, one after another.
fn inbox_scenarios<S: Subject>(subject: &S, inbox: &RealInbox) -> Vec<Violation> {
    let mut violations = Vec::new();
    for scenario in [
        Scenario::RunTwice,
        Scenario::Parallel,
        Scenario::Redelivery,
        Scenario::Restart,
        Scenario::BusinessKey,
        Scenario::ExactIds,
        Scenario::FailedCommit,
    ] {
        violations.extend(scenario.check(subject, subject, inbox).err());
    }
    violations.extend(storage_fault_in_handler(subject, inbox, 10).err());
    violations.extend(claim_refused(subject, inbox, 10).err());
    violations.extend(conflicts_retried(subject, inbox).err());
    violations.extend(rules_across_messages(subject, inbox).err());
    violations.extend(cannot_apply(subject, inbox).err());
    violations
}

/// The required scenarios of dead letters through `inbox`.
fn dead_letter_scenarios<S: Subject>(subject: &S, inbox: &RealDeadLetters) -> Vec<Violation> {
    let mut violations = Vec::new();
    violations.extend(dead_letters(subject, inbox).err());
    violations.extend(crash_loop(subject, inbox).err());
    violations.extend(refused_after_a_failure(subject, inbox).err());
    violations
}

/// A [`Subject`] without its state type, so that subjects of different
/// types can sit in one list (a project's `subjects::all()`).
pub trait AnySubject: Sync {
    /// The consumer the subject tests.
    fn consumer(&self) -> &'static str;
    /// Runs every required scenario for it; returns what was violated.
    fn required_scenarios(&self) -> Vec<Violation>;
}

impl<S: Subject> AnySubject for S {
    fn consumer(&self) -> &'static str {
        self.handler().consumer()
    }
    fn required_scenarios(&self) -> Vec<Violation> {
        required_scenarios(self)
    }
}
