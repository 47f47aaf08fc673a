//! The required scenarios together: by name ([`Scenario`], for tests that
//! pick one from a table) and as a project's required tests name them,
//! each run for every subject it has ([`Required`],
//! [`every_subject_passes`]).

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

/// The required scenarios as a project's required tests name them: one
/// test each, run for every subject the project has
/// ([`every_subject_passes`]), so that a consumer added to the subjects is
/// judged by all of them with no test of its own to write, and a failure
/// names the scenario and the consumer. Each is played through every way
/// of running the real inbox (or of parking dead letters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Required {
    /// The same messages delivered twice apply once.
    RunTwice,
    /// Workers delivering the same messages at once apply each once.
    Parallel,
    /// A delivery that fails leaves no trace; its redelivery applies once.
    Redelivery,
    /// Duplicates are still caught by a new process.
    Restart,
    /// The consumer's own tables refuse a repeat that gets past the inbox.
    BusinessKey,
    /// Ids are compared exactly.
    ExactIds,
    /// A COMMIT that fails reports nothing as applied.
    FailedCommit,
    /// A storage fault, a refused claim or a lost race is never the
    /// message's.
    DatabaseFaults,
    /// Messages about one entity at once end as some serial order would.
    RulesAcrossMessages,
    /// A message naming what does not exist yet fails, and applies once it
    /// does.
    CannotApply,
    /// A message that always fails is parked, stays a duplicate, and is
    /// redriven once; a crash loop parks it too.
    DeadLetters,
}

impl Required {
    /// Every required scenario, in the order they are played.
    pub const ALL: [Self; 11] = [
        Self::RunTwice,
        Self::Parallel,
        Self::Redelivery,
        Self::Restart,
        Self::BusinessKey,
        Self::ExactIds,
        Self::FailedCommit,
        Self::DatabaseFaults,
        Self::RulesAcrossMessages,
        Self::CannotApply,
        Self::DeadLetters,
    ];

    /// Plays this scenario for `subject` through every real inbox, each on
    /// a thread of its own (every scenario has a fixture of its own, so
    /// they cannot meet); returns what was violated, in the same order
    /// every run.
    pub fn violations<S: Subject>(self, subject: &S) -> Vec<Violation> {
        let plays = if self == Self::DeadLetters {
            each_at_once(&RealDeadLetters::ALL, |letters| {
                dead_letter_scenarios(subject, letters)
            })
        } else {
            each_at_once(&RealInbox::ALL, |inbox| self.through(subject, inbox))
        };
        plays.into_iter().flatten().collect()
    }

    /// Plays this scenario through `inbox` (every one but dead letters).
    fn through<S: Subject>(self, subject: &S, inbox: &RealInbox) -> Vec<Violation> {
        let one = |scenario: Scenario| scenario.check(subject, subject, inbox).err();
        match self {
            Self::RunTwice => one(Scenario::RunTwice).into_iter().collect(),
            Self::Parallel => one(Scenario::Parallel).into_iter().collect(),
            Self::Redelivery => one(Scenario::Redelivery).into_iter().collect(),
            Self::Restart => one(Scenario::Restart).into_iter().collect(),
            Self::BusinessKey => one(Scenario::BusinessKey).into_iter().collect(),
            Self::ExactIds => one(Scenario::ExactIds).into_iter().collect(),
            Self::FailedCommit => one(Scenario::FailedCommit).into_iter().collect(),
            Self::DatabaseFaults => [
                storage_fault_in_handler(subject, inbox, 10).err(),
                claim_refused(subject, inbox, 10).err(),
                conflicts_retried(subject, inbox).err(),
            ]
            .into_iter()
            .flatten()
            .collect(),
            Self::RulesAcrossMessages => rules_across_messages(subject, inbox)
                .err()
                .into_iter()
                .collect(),
            Self::CannotApply => cannot_apply(subject, inbox).err().into_iter().collect(),
            Self::DeadLetters => unreachable!("dead letters are played through RealDeadLetters"),
        }
    }
}

/// The required scenarios of dead letters through `letters`.
fn dead_letter_scenarios<S: Subject>(subject: &S, letters: &RealDeadLetters) -> Vec<Violation> {
    let mut violations = Vec::new();
    violations.extend(dead_letters(subject, letters).err());
    violations.extend(crash_loop(subject, letters).err());
    violations.extend(refused_after_a_failure(subject, letters).err());
    violations
}

/// Plays `scenario` for every subject in `subjects` (a project's
/// `subjects::all()`), and panics with every violation found, each
/// prefixed with its consumer, if there is one: the body of a project's
/// required test. Its message starts with "violation: ", as every judged
/// scenario's does.
pub fn every_subject_passes(subjects: &[Box<dyn AnySubject>], scenario: Required) {
    let found: Vec<String> = subjects
        .iter()
        .flat_map(|subject| {
            subject
                .violations_of(scenario)
                .into_iter()
                .map(move |violation| format!("consumer `{}`: {violation}", subject.consumer()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "violation: {scenario:?}: {} violation(s):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// A [`Subject`] without its state type, so that subjects of different
/// types can sit in one list (a project's `subjects::all()`).
pub trait AnySubject: Sync {
    /// The consumer the subject tests.
    fn consumer(&self) -> &'static str;
    /// Runs one required scenario for it; returns what was violated.
    fn violations_of(&self, scenario: Required) -> Vec<Violation>;
}

impl<S: Subject> AnySubject for S {
    fn consumer(&self) -> &'static str {
        self.handler().consumer()
    }
    fn violations_of(&self, scenario: Required) -> Vec<Violation> {
        scenario.violations(self)
    }
}
