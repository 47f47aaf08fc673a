//! **Parallel**: several workers, each on its own connection, deliver the
//! same messages in the same order, meeting at a barrier before every
//! slice. Same order and common starts make two workers handle the same
//! message at the same moment, which is what exposes check-then-act.

use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use crate::harness::EventOf;
use crate::harness::deliver_all;
use crate::harness::env::env_number;
use crate::harness::{
    Expected, InboxUnderTest, Play, PlayOf, Subject, Violation, facts, fixture_for, hangs, observe,
};

/// Rounds the judged parallel scenario plays at least, unless
/// `PARALLEL_ROUNDS` says otherwise.
///
/// A race shows only when workers really overlap, and on a loaded machine
/// the scheduler often runs one worker through a message before the others
/// wake. So the workers meet at a barrier before every slice of [`SLICE`]
/// messages, the scenario plays several independent rounds (each on new
/// message ids in the same database), and it counts the slices that two
/// workers were inside at the same moment: while fewer than
/// [`RACED_SLICES`] have raced, it plays more rounds, up to [`MAX_ROUNDS`].
/// `scripts/stress.sh` sets one round per iteration: repeating is its job.
pub const PARALLEL_ROUNDS: usize = 10;

/// Messages each worker delivers (as one batch) between two meetings.
pub const SLICE: usize = 1;

/// Slices that must have raced (two workers inside at once) before the
/// scenario stops adding rounds, unless `PARALLEL_RACED_SLICES` says
/// otherwise.
pub const RACED_SLICES: usize = 200;

/// The most rounds the scenario plays, however little raced.
pub const MAX_ROUNDS: usize = 100;

/// One round on a fresh database: `workers` threads, each on its own
/// connection, deliver the same messages in the same order, meeting at a
/// barrier before each slice.
pub fn play_parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    workers: usize,
    count: usize,
) -> PlayOf<S> {
    play_rounds(subject, inbox, workers, count, SLICE, 1, 0)
}

/// One round as the seed's reference consumer plays it (and
/// `benches/seed_baseline.py` with it): the workers meet once, at the
/// start, then each delivers all `count` messages without waiting for the
/// others. For comparing with that reference; the required test meets
/// before every slice, which races more and costs more.
pub fn play_parallel_meeting_once<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    workers: usize,
    count: usize,
) -> PlayOf<S> {
    play_rounds(subject, inbox, workers, count, count.max(1), 1, 0)
}

/// At least `rounds` rounds on one database, each on its own message ids,
/// and more until `raced_slices` slices raced (or [`MAX_ROUNDS`]); the
/// workers meet before every `slice` messages.
fn play_rounds<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    workers: usize,
    count: usize,
    slice: usize,
    rounds: usize,
    raced_slices: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "parallel {workers}x{count} via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let mut messages = Vec::new();
    let mut outcomes = Summary::default();
    let mut raced = 0;
    let mut played = 0;
    while played < rounds || (raced < raced_slices && played < MAX_ROUNDS) {
        played += 1;
        let batch = round_messages(subject, count, numbered(rounds, raced_slices, played));
        let barrier = Barrier::new(workers);
        let slices: Vec<AtomicUsize> = batch.chunks(slice).map(|_| AtomicUsize::new(0)).collect();
        let raced_now = AtomicUsize::new(0);
        outcomes += std::thread::scope(|scope| {
            let threads: Vec<_> = (0..workers)
                .map(|at| {
                    let (barrier, handler, batch) = (&barrier, handler.as_ref(), &batch);
                    let (slices, raced_now, fixture) = (&slices, &raced_now, &fixture);
                    let context = hangs::context();
                    let name = format!("worker {} of {workers}", at + 1);
                    let thread = std::thread::Builder::new().name(name.clone());
                    let worker = move || {
                        let _in = hangs::enter(context);
                        // Each worker connects on its own thread: the
                        // connections open at once, not one after another.
                        let mut worker = inbox.open(fixture);
                        let mut outcomes = Summary::default();
                        for (slice, inside) in batch.chunks(slice).zip(slices) {
                            let waiting = hangs::waiting(format!(
                                "{name} at the barrier, waiting for the others"
                            ));
                            barrier.wait();
                            drop(waiting);
                            if inside.fetch_add(1, Ordering::SeqCst) == 1 {
                                raced_now.fetch_add(1, Ordering::Relaxed);
                            }
                            outcomes += deliver_all(worker.as_mut(), handler, slice);
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }
                        outcomes
                    };
                    thread.spawn_scoped(scope, worker).expect("start a worker")
                })
                .collect();
            threads
                .into_iter()
                .fold(Summary::default(), |mut total, thread| {
                    total += thread.join().expect("worker thread");
                    total
                })
        });
        raced += raced_now.into_inner();
        messages.extend(batch);
    }
    Play {
        scenario: format!(
            "parallel {workers}x{count}, {played} rounds ({raced} slices raced), via {}",
            inbox.name()
        ),
        consumer: handler.consumer().to_owned(),
        deliveries: (workers * messages.len()) as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

/// The number `round`'s message ids carry, if any: none when a lone round
/// is all there is to play.
fn numbered(rounds: usize, raced_slices: usize, round: usize) -> Option<usize> {
    let single = rounds == 1 && raced_slices == 0;
    (!single).then_some(round)
}

/// New facts for one round, under ids prefixed with the round's number so
/// that rounds never overlap (a lone round's are the plain `m-...`).
fn round_messages<S: Subject>(
    subject: &S,
    count: usize,
    round: Option<usize>,
) -> Vec<Message<EventOf<S>>> {
    let prefix = round.map_or_else(|| "m-".to_owned(), |round| format!("r{round}-m-"));
    facts(subject, &prefix, count)
}

/// The parallel scenario, judged: [`PARALLEL_ROUNDS`] rounds in one
/// database (more while fewer than [`RACED_SLICES`] slices raced), then
/// every message must be applied once with no failure (a contended lock is
/// not a failure).
///
/// The messages of the rounds it plays at least are known before they are
/// played, so what they must give (the model, and once-only on a database
/// of its own) is worked out on another thread meanwhile: the workers spend
/// most of a round waiting for each other and for the server, and the
/// stress loop repeats this scenario thousands of times. A play that needed
/// more rounds is judged afresh, on every message it played.
pub fn parallel<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    workers: usize,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    let rounds = env_number("PARALLEL_ROUNDS", PARALLEL_ROUNDS as u64).max(1) as usize;
    let raced = env_number("PARALLEL_RACED_SLICES", RACED_SLICES as u64) as usize;
    parallel_judged(subject, inbox, workers, count, rounds, raced)
}

/// [`parallel`] with its rounds given: at least `rounds`, and more until
/// `raced` slices raced. `(1, 0)` is one iteration of the stress loop.
pub fn parallel_judged<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    workers: usize,
    count: usize,
    rounds: usize,
    raced: usize,
) -> Result<PlayOf<S>, Violation> {
    let planned: Vec<Message<EventOf<S>>> = (1..=rounds)
        .flat_map(|round| round_messages(subject, count, numbered(rounds, raced, round)))
        .collect();
    std::thread::scope(|scope| {
        let expected = scope.spawn(|| Expected::of(subject, &planned));
        let play = play_rounds(subject, inbox, workers, count, SLICE, rounds, raced);
        let expected = expected.join().expect("the expectation's thread");
        if play.messages == planned {
            play.judge_against(&expected?)
        } else {
            play.judge(subject)
        }
    })
}
