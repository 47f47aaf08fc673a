//! **Parallel**: several workers, each on its own connection, released
//! together by a barrier, each deliver the same messages in the same order.
//! Same order and a common start make two workers handle the same message
//! at the same moment, which is what exposes check-then-act.

use std::sync::Barrier;

use {{crate_name}}::pipeline::Summary;

use super::deliver_all;
use crate::support::harness::judge::observe;
use crate::support::harness::{
    Expected, InboxUnderTest, Play, Subject, Violation, env_number, fixture_for,
};

/// Rounds the judged parallel scenario plays unless `PARALLEL_ROUNDS` says
/// otherwise.
///
/// One round caught check-then-act and the deferred `BEGIN` in 963 to 1,000
/// runs out of 1,000 on a 2-core machine (fewer in release builds): now and
/// then the scheduler lets one worker finish all its messages before the
/// others wake up, and a serial schedule has no race to expose. Rounds are
/// independent, so five of them miss with a probability below one in ten
/// million even at the worst measured rate; in 1,000 measured runs they
/// never missed. `scripts/stress.sh` plays one round per iteration:
/// repeating is its job.
pub const PARALLEL_ROUNDS: usize = 5;

/// One round.
pub fn play_parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    workers: usize,
    count: usize,
) -> Play<S::State> {
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = subject.messages(count);
    let barrier = Barrier::new(workers);
    let outcomes = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                let mut worker = inbox.open(&fixture);
                let (barrier, handler, messages) = (&barrier, handler.as_ref(), &messages);
                scope.spawn(move || {
                    barrier.wait();
                    deliver_all(worker.as_mut(), handler, messages)
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
    Play {
        scenario: format!("parallel {workers}x{count} via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: (workers * count) as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

/// The parallel scenario, judged, for [`PARALLEL_ROUNDS`] rounds on fresh
/// databases: every round must be applied-once with no failure (a contended
/// lock is not a failure). Returns the last round.
pub fn parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest,
    workers: usize,
    count: usize,
) -> Result<Play<S::State>, Violation> {
    let rounds = env_number("PARALLEL_ROUNDS", PARALLEL_ROUNDS as u64).max(1);
    let expected = Expected::of(subject, &subject.messages(count))?;
    let mut last = None;
    for round in 1..=rounds {
        let judged = play_parallel(subject, inbox, workers, count).judge_against(&expected);
        last = Some(judged.map_err(|v| Violation(format!("round {round} of {rounds}: {v}")))?);
    }
    Ok(last.expect("at least one round"))
}
