//! **Parallel**: several workers, each on its own connection, deliver the
//! same messages in the same order, meeting at a barrier before every
//! slice. Same order and common starts make two workers handle the same
//! message at the same moment, which is what exposes check-then-act.

use std::sync::Barrier;

use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::pipeline::Summary;

use super::deliver_all;
use crate::support::harness::judge::observe;
use crate::support::harness::{InboxUnderTest, Play, Subject, Violation, env_number, fixture_for};

/// Rounds the judged parallel scenario plays unless `PARALLEL_ROUNDS` says
/// otherwise.
///
/// A race shows only when workers really overlap, and now and then the
/// scheduler runs one worker's slice to the end before the others wake
/// (more often on a loaded machine). So the workers meet at a barrier
/// before every slice of [`SLICE`] messages, and the judged scenario plays
/// several independent rounds, each on new message ids in the same
/// database: one round in which check-then-act slips through does not
/// hide it. `scripts/stress.sh` plays one round per iteration: repeating is
/// its job.
pub const PARALLEL_ROUNDS: usize = 10;

/// Messages each worker delivers (as one batch) between two meetings.
pub const SLICE: usize = 10;

/// One round on a fresh database: `workers` threads, each on its own
/// connection, deliver the same messages in the same order, meeting at a
/// barrier before each slice.
pub fn play_parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    workers: usize,
    count: usize,
) -> Play<S::State> {
    play_rounds(subject, inbox, workers, count, 1)
}

/// `rounds` rounds on one database, each on its own message ids.
fn play_rounds<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    workers: usize,
    count: usize,
    rounds: usize,
) -> Play<S::State> {
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let mut messages = Vec::new();
    let mut outcomes = Summary::default();
    for round in 1..=rounds {
        let batch = round_messages(subject, count, round, rounds);
        let barrier = Barrier::new(workers);
        outcomes += std::thread::scope(|scope| {
            let threads: Vec<_> = (0..workers)
                .map(|_| {
                    let mut worker = inbox.open(&fixture);
                    let (barrier, handler, batch) = (&barrier, handler.as_ref(), &batch);
                    scope.spawn(move || {
                        let mut outcomes = Summary::default();
                        for slice in batch.chunks(SLICE) {
                            barrier.wait();
                            outcomes += deliver_all(worker.as_mut(), handler, slice);
                        }
                        outcomes
                    })
                })
                .collect();
            threads
                .into_iter()
                .fold(Summary::default(), |mut total, thread| {
                    total += thread.join().expect("worker thread");
                    total
                })
        });
        messages.extend(batch);
    }
    Play {
        scenario: format!(
            "parallel {workers}x{count}, {rounds} rounds, via {}",
            inbox.name()
        ),
        consumer: handler.consumer().to_owned(),
        deliveries: (workers * count * rounds) as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

/// The subject's messages for one round: the same ids in a single round,
/// ids prefixed with the round otherwise, so that rounds never overlap.
fn round_messages<S: Subject>(
    subject: &S,
    count: usize,
    round: usize,
    rounds: usize,
) -> Vec<Message> {
    let messages = subject.messages(count);
    if rounds == 1 {
        return messages;
    }
    messages
        .into_iter()
        .map(|message| Message {
            id: MessageId::new(format!("r{round}-{}", message.id)).expect("a valid id"),
            event: message.event,
        })
        .collect()
}

/// The parallel scenario, judged: [`PARALLEL_ROUNDS`] rounds in one
/// database, then every message must be applied once with no failure (a
/// contended lock is not a failure).
pub fn parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    workers: usize,
    count: usize,
) -> Result<Play<S::State>, Violation> {
    let rounds = env_number("PARALLEL_ROUNDS", PARALLEL_ROUNDS as u64).max(1) as usize;
    play_rounds(subject, inbox, workers, count, rounds).judge(subject)
}
