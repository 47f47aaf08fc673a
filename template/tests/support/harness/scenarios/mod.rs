//! The delivery schedules, one file each. Every scenario has a `play_`
//! form that runs it and returns a [`Play`](super::Play) of what it left
//! behind, and a judged form of the same name without `play_` that returns
//! that play once it passed, or the [`Violation`](super::Violation) that
//! says what went wrong.

mod pipeline;
mod process;
mod restart;
mod retention;
mod serial;
mod statements;
mod storage;

pub use inbox_kit_testkit::harness::scenarios::*;
pub use pipeline::*;
pub use process::{SECOND_PROCESS_TEST, serve_second_process};
pub use restart::*;
pub use retention::*;
pub use serial::*;
pub use statements::*;
pub use storage::*;

use super::{
    InboxUnderTest, LocalSubject, RealDeadLetters, RealInbox, ThisProject, Violation, each_at_once,
    stress_messages, stress_workers,
};

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
    pub fn check<A: LocalSubject, B: LocalSubject>(
        self,
        first: &A,
        second: &B,
        inbox: &dyn InboxUnderTest<ThisProject>,
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
pub fn required_scenarios<S: LocalSubject>(subject: &S) -> Vec<Violation> {
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
fn inbox_scenarios<S: LocalSubject>(subject: &S, inbox: &RealInbox) -> Vec<Violation> {
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
fn dead_letter_scenarios<S: LocalSubject>(subject: &S, inbox: &RealDeadLetters) -> Vec<Violation> {
    let mut violations = Vec::new();
    violations.extend(dead_letters(subject, inbox).err());
    violations.extend(crash_loop(subject, inbox).err());
    violations.extend(refused_after_a_failure(subject, inbox).err());
    violations
}
