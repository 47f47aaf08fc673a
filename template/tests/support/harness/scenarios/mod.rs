//! The delivery schedules, one file each. Every scenario has a `play_`
//! form that runs it and returns a [`Play`](super::Play) of what it left
//! behind, and a judged form of the same name without `play_` that returns
//! that play once it passed, or the [`Violation`](super::Violation) that
//! says what went wrong.

mod business_key;
mod cannot_apply;
mod commit;
mod consumers;
mod ids;
mod parallel;
mod pipeline;
mod poison;
mod process;
mod redelivery;
mod restart;
mod retention;
mod serial;
mod statements;
mod storage;
mod twice;

pub use business_key::*;
pub use cannot_apply::*;
pub use commit::*;
pub use consumers::*;
pub use ids::*;
pub use parallel::*;
pub use pipeline::*;
pub use poison::*;
pub use process::{SECOND_PROCESS_TEST, serve_second_process};
pub use redelivery::*;
pub use restart::*;
pub use retention::*;
pub use serial::*;
pub use statements::*;
pub use storage::*;
pub use twice::*;

use {{crate_name}}::handlers::{BorrowedHandler, Handlers};
use {{crate_name}}::inbox::{Delivery, Inbox};
use {{crate_name}}::message::Message;
use {{crate_name}}::pipeline::Summary;

use super::observe;
use super::{
    InboxUnderTest, LocalSubject, Play, RealDeadLetters, RealInbox, Violation, hangs,
    stress_messages, stress_workers,
};
use crate::support::database::Fixture;

/// Delivers `messages` in order through one connection, as one batch (the
/// inbox under test splits it into transactions), and counts outcomes. A
/// storage error counts every delivery of the batch as failed: nothing of
/// it may be acknowledged.
pub fn deliver_all(
    inbox: &mut dyn Inbox<Handlers>,
    handler: &BorrowedHandler<'_>,
    messages: &[Message],
) -> Summary {
    let _waiting = hangs::waiting(delivering(messages.iter(), handler.consumer()));
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery::new(handler, message))
        .collect();
    let mut summary = Summary::default();
    match inbox.deliver_batch(&deliveries) {
        Ok(outcomes) => outcomes.iter().for_each(|o| summary.count(o)),
        Err(error) => {
            eprintln!("storage error: {error}");
            summary.failed += deliveries.len() as u64;
        }
    }
    summary
}

/// What a worker delivering `messages` to `consumer` waits for, for the
/// hang report: `worker 2 of 4 delivering 1 message (m-00001) to `debit``.
fn delivering<'a>(
    mut messages: impl ExactSizeIterator<Item = &'a Message>,
    consumer: &str,
) -> String {
    let count = messages.len();
    let first = messages.next().map(|message| message.id.to_string());
    let last = messages.last().map(|message| message.id.to_string());
    let which = match (first, last) {
        (Some(first), Some(last)) => format!("{count} messages ({first} to {last})"),
        (Some(first), None) => format!("1 message ({first})"),
        _ => "no message".to_owned(),
    };
    let worker = std::thread::current()
        .name()
        .filter(|name| name.starts_with("worker "))
        .map_or_else(String::new, |name| format!("{name} "));
    format!("{worker}delivering {which} to `{consumer}`")
}

/// The first `count` of the subject's facts that it applies (none it
/// refuses), for scenarios about what happens to messages that are fine.
fn applied_facts<S: LocalSubject>(subject: &S, count: usize) -> Vec<Message> {
    let candidates = super::facts(subject, "m-", 4 * count);
    let refused = subject.model(&candidates).refused;
    candidates
        .into_iter()
        .filter(|message| !refused.contains_key(message.id.as_str()))
        .take(count)
        .collect()
}

/// The deliveries of a scenario in which the database fails them for a
/// while: `handler` delivers `messages`, `rounds` times while the fault
/// holds; what that leaves is the step `step` of the play `scenario`.
pub struct Fault<'a> {
    pub scenario: String,
    pub step: &'static str,
    pub rounds: u32,
    pub handler: &'a BorrowedHandler<'a>,
    pub messages: Vec<Message>,
}

/// Plays a [`Fault`] through `worker`: its rounds while the fault holds,
/// then `lift` ends the fault, the state is observed as the fault's step,
/// and every message is delivered once more. The play's end counts only
/// that last round.
pub fn play_through_fault<S: LocalSubject>(
    subject: &S,
    fixture: &Fixture,
    worker: &mut dyn Inbox<Handlers>,
    fault: Fault<'_>,
    lift: impl FnOnce(),
) -> Play<S::State> {
    let mut faulted = Summary::default();
    for _ in 0..fault.rounds {
        faulted += deliver_all(worker, fault.handler, &fault.messages);
    }
    lift();
    let after_fault = observe(fixture, subject, faulted);
    let outcomes = deliver_all(worker, fault.handler, &fault.messages);
    Play {
        scenario: fault.scenario,
        consumer: fault.handler.consumer().to_owned(),
        deliveries: fault.messages.len() as u64,
        steps: vec![(fault.step.to_owned(), after_fault)],
        observed: observe(fixture, subject, outcomes),
        messages: fault.messages,
    }
}

/// Delivers `(handler, message)` pairs in order through one connection, as
/// one batch, and counts the outcomes of the first handler's deliveries
/// and of the second's. A storage error counts every delivery of the batch
/// as failed.
pub fn deliver_mixed(
    inbox: &mut dyn Inbox<Handlers>,
    pairs: &[(&BorrowedHandler<'_>, &Message)],
) -> [Summary; 2] {
    let first = pairs.first().map(|(handler, _)| handler.consumer());
    let _waiting = hangs::waiting(delivering(
        pairs.iter().map(|(_, message)| *message),
        first.unwrap_or("nobody"),
    ));
    let deliveries: Vec<_> = pairs
        .iter()
        .map(|(handler, message)| Delivery::new(*handler, message))
        .collect();
    let mut counts = [Summary::default(), Summary::default()];
    let which = |delivery: &Delivery<'_>| usize::from(Some(delivery.handler.consumer()) != first);
    match inbox.deliver_batch(&deliveries) {
        Ok(outcomes) => {
            for (delivery, outcome) in deliveries.iter().zip(&outcomes) {
                counts[which(delivery)].count(outcome);
            }
        }
        Err(error) => {
            eprintln!("storage error: {error}");
            for delivery in &deliveries {
                counts[which(delivery)].failed += 1;
            }
        }
    }
    counts
}

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
        inbox: &dyn InboxUnderTest,
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

/// `play` for each of `inboxes`, each on a thread of its own, at the same
/// time; the results in the order of `inboxes`. The threads are named
/// after this one, so that a hang report names the test they belong to
/// (libtest names a test's thread after it).
pub fn each_at_once<I: Sync, T: Send>(inboxes: &[I], play: impl Fn(&I) -> T + Sync) -> Vec<T> {
    let play = &play;
    std::thread::scope(|scope| {
        let plays: Vec<_> = inboxes
            .iter()
            .map(|inbox| {
                let mut thread = std::thread::Builder::new();
                if let Some(name) = std::thread::current().name() {
                    thread = thread.name(name.to_owned());
                }
                thread
                    .spawn_scoped(scope, move || play(inbox))
                    .expect("start a thread for a scenario")
            })
            .collect();
        plays
            .into_iter()
            .map(|play| {
                play.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}
