//! How a scenario delivers: a fresh fixture for an inbox under test, one
//! worker's batch through an inbox, the rounds of a fault, and scenarios
//! played side by side.
//!
//! A storage error fails every delivery of its batch: nothing of it may be
//! acknowledged, so nothing of it counts as settled.

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::handler::{Registry, Subscriber};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use super::hangs;
use super::inboxes::InboxUnderTest;
use super::judge::{Play, PlayOf, observe};
use super::project::{Fixture, HandlerOf, Project};
use super::subject::{EventOf, Seed, Subject, facts};

/// A fresh database of project `P` with every table, prepared for
/// `inbox`, seeded for `subjects`.
pub fn fixture_for<P: Project>(
    inbox: &dyn InboxUnderTest<P>,
    subjects: &[&dyn Seed<P>],
) -> P::Fixture {
    let fixture = P::Fixture::new();
    inbox.prepare(&fixture);
    fixture.with_tables(|tables| {
        subjects
            .iter()
            .try_for_each(|subject| subject.seed_tables(tables))
    });
    fixture
}

/// Delivers `messages` in order through one connection, as one batch (the
/// inbox under test splits it into transactions), and counts outcomes.
pub fn deliver_all<'a, R: Registry>(
    inbox: &mut dyn Inbox<R>,
    handler: &'a R::Handler<'a>,
    messages: &'a [Message<R::Event>],
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

/// Delivers `(handler, message)` pairs in order through one connection, as
/// one batch, and counts the outcomes of the first handler's deliveries
/// and of the second's.
pub fn deliver_mixed<'a, R: Registry>(
    inbox: &mut dyn Inbox<R>,
    pairs: &[(&'a R::Handler<'a>, &'a Message<R::Event>)],
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
    let which =
        |delivery: &Delivery<'_, R>| usize::from(Some(delivery.handler.consumer()) != first);
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

/// What a worker delivering `messages` to `consumer` waits for, for the
/// hang report: `worker 2 of 4 delivering 1 message (m-00001) to `debit``.
fn delivering<'a, E: 'a>(
    mut messages: impl ExactSizeIterator<Item = &'a Message<E>>,
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
pub fn applied_facts<S: Subject>(subject: &S, count: usize) -> Vec<Message<EventOf<S>>> {
    let candidates = facts(subject, "m-", 4 * count);
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
pub struct Fault<'a, P: Project> {
    pub scenario: String,
    pub step: &'static str,
    pub rounds: u32,
    pub handler: &'a HandlerOf<'a, P>,
    pub messages: Vec<Message<P::Event>>,
}

/// Plays a [`Fault`] through `worker`: its rounds while the fault holds,
/// then `lift` ends the fault, the state is observed as the fault's step,
/// and every message is delivered once more. The play's end counts only
/// that last round.
pub fn play_through_fault<S: Subject>(
    subject: &S,
    fixture: &<S::Project as Project>::Fixture,
    worker: &mut dyn Inbox<<S::Project as Project>::Registry>,
    fault: Fault<'_, S::Project>,
    lift: impl FnOnce(),
) -> PlayOf<S> {
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
