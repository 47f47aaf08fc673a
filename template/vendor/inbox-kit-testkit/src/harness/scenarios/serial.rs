//! **Rules across messages**: different messages about one business
//! entity (the refunds of one payment), delivered at the same moment by
//! several workers of this process and of a second one, none of them
//! routed by partition key. The inbox keeps each message once; it does not
//! keep a rule that spans messages ("never more than was paid"): the
//! handler must, with a lock or a conditional write in the database.
//!
//! The judge does not know how the rule is kept. After each round it asks
//! only whether the end state, and which messages were refused, equal what
//! the subject's model gives for *some* serial order of the round's
//! messages (after the orders found for the rounds before). A handful of
//! messages has few orders (5 have 120): they are simply all tried. A
//! check made with a plain read before the write lets two refunds through
//! where one fits, which no order explains.
//!
//! Rounds alternate between two ways of delivering:
//!
//! * **at once**: every message by its own worker at the same moment. Where
//!   the database runs writers side by side (PostgreSQL), the workers of
//!   this process also wait at a gate before their commits until every
//!   other one has run its handler or waits for a lock, so that their reads
//!   overlap every time, not only when the scheduler lets them. (On SQLite a
//!   transaction holds the one write lock from its first statement, so
//!   these rounds serialize: there the scenario checks that the serial
//!   result is right.)
//! * **in turns**: one message at a time, taking turns between the two
//!   processes. A rule kept in one process's memory (a count read once,
//!   then kept up to date in Rust) goes stale as soon as the other process
//!   applies a message, and lets the next one through.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::{Barrier, Condvar, Mutex};
use std::time::Duration;

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::handler::{Handler, HandlerError, Subscriber};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;

use super::process::{
    Assignment, from_lines, second_process, summary_from_json, summary_to_json, to_lines,
};
use crate::harness::deliver_all;
use crate::harness::env::env_number;
use crate::harness::{EventOf, Fixture, HandlerOf, PlayOf, Project};
use crate::harness::{
    InboxUnderTest, Play, Subject, Violation, fixture_for, hangs, observe, state_against,
};

/// Rounds the scenario plays unless `SERIAL_ROUNDS` says otherwise (at
/// most as many as the subject has entities for).
pub const SERIAL_ROUNDS: usize = 10;

/// Messages of each round this process delivers, one worker each; the
/// rest go to the second process.
const LOCAL: usize = 3;

/// How long a worker waits inside its transaction for the others. Only a
/// guard against a broken inbox that never calls the handler: the workers
/// normally pass within milliseconds.
const GATE_PATIENCE: Duration = Duration::from_secs(5);

/// How often a worker at the gate looks again at who waits for a lock
/// (an arrival wakes it at once).
const GATE_LOOK: Duration = Duration::from_millis(2);

/// Where one worker of an at-once round is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Delivering, before or inside its handler.
    Running,
    /// At the gate: its handler has run, its transaction is open.
    AtGate,
    /// Past the gate, or its delivery ended without reaching it.
    Gone,
}

/// The gate before the commit. A worker whose handler has run keeps its
/// transaction open until every other worker of the round has run its own
/// handler too, or waits for a lock in the database (held by a worker at
/// the gate, maybe): whatever a handler reads, it reads before any of the
/// others commits, unless a lock makes it wait for that commit. A check
/// made with a plain read then sees none of the others' writes, every
/// time; a check under a lock waits and sees them all. (Connections of the
/// second process waiting for a lock are counted too: the gate may open
/// early, never late.)
struct Gate<'a, P: Project> {
    places: Mutex<Vec<Place>>,
    moved: Condvar,
    fixture: &'a P::Fixture,
}

impl<'a, P: Project> Gate<'a, P> {
    fn new(workers: usize, fixture: &'a P::Fixture) -> Self {
        Self {
            places: Mutex::new(vec![Place::Running; workers]),
            moved: Condvar::new(),
            fixture,
        }
    }

    fn set(&self, worker: usize, place: Place) {
        self.places.lock().expect("gate")[worker] = place;
        self.moved.notify_all();
    }

    /// Worker `me` waits at the gate until nobody else runs unblocked.
    fn pass(&self, me: usize) {
        self.set(me, Place::AtGate);
        let patience = std::time::Instant::now() + GATE_PATIENCE;
        let mut places = self.places.lock().expect("gate");
        loop {
            let running = places.iter().filter(|&&p| p == Place::Running).count();
            if running == 0 || std::time::Instant::now() >= patience {
                break;
            }
            drop(places);
            if running <= self.fixture.waiting_on_locks() {
                places = self.places.lock().expect("gate");
                break;
            }
            places = self.places.lock().expect("gate");
            places = self.moved.wait_timeout(places, GATE_LOOK).expect("gate").0;
        }
        places[me] = Place::Gone;
        self.moved.notify_all();
    }
}

/// The handler of one worker of an at-once round, then the gate.
struct GatedHandler<'a, P: Project> {
    inner: &'a HandlerOf<'a, P>,
    gate: &'a Gate<'a, P>,
    worker: usize,
}

impl<P: Project> Subscriber<P::Event> for GatedHandler<'_, P> {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }

    fn subscribes_to(&self, event: &P::Event) -> bool {
        self.inner.subscribes_to(event)
    }
}

impl<'t, P: Project> Handler<P::Event, P::Tables<'t>> for GatedHandler<'_, P> {
    fn apply(
        &self,
        tables: &mut P::Tables<'t>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError> {
        self.gate.set(self.worker, Place::Running);
        let applied = self.inner.apply(tables, message);
        self.gate.pass(self.worker);
        applied
    }
}

/// Every order of `items`.
fn orders<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (at, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(at);
        for mut order in orders(&rest) {
            order.insert(0, first.clone());
            all.push(order);
        }
    }
    all
}

pub fn rules_across_messages<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
) -> Result<PlayOf<S>, Violation> {
    let _scenario = hangs::scenario(format!(
        "rules across messages via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let wanted = env_number("SERIAL_ROUNDS", SERIAL_ROUNDS as u64) as usize;
    let rounds: Vec<Vec<Message<EventOf<S>>>> = (0..wanted)
        .map(|round| subject.contended(round))
        .take_while(|messages| !messages.is_empty())
        .collect();
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let scenario = format!(
        "rules across messages, {} rounds, two processes, via {}",
        rounds.len(),
        inbox.name()
    );
    let mut play = Play {
        scenario,
        consumer: handler.consumer().to_owned(),
        messages: Vec::new(),
        deliveries: 0,
        steps: Vec::new(),
        observed: observe(&fixture, subject, Summary::default()),
    };
    if rounds.is_empty() {
        return Ok(play);
    }
    let remote: Vec<Vec<String>> = rounds
        .iter()
        .map(|messages| to_lines(messages.get(LOCAL..).unwrap_or_default()))
        .collect();
    let assignment = serde_json::json!({
        "kind": "serial",
        "fixture": fixture.location(),
        "inbox": inbox.name(),
        "consumer": handler.consumer(),
        "rounds": remote,
    });
    let mut helper = second_process(&assignment)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the second process");
    let mut to_helper = helper.stdin.take().expect("piped stdin");
    let mut from_helper = BufReader::new(helper.stdout.take().expect("piped stdout")).lines();
    let mut said = |prefix: &str| -> String {
        let _waiting = hangs::waiting_for_process(format!("the second process to say {prefix:?}"));
        from_helper
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix(prefix).map(str::to_owned))
            .unwrap_or_else(|| panic!("the second process ended before saying {prefix:?}"))
    };
    said("serial: ready");

    let mut workers: Vec<_> = (0..LOCAL).map(|_| inbox.open(&fixture)).collect();
    let mut history: Vec<Message<EventOf<S>>> = Vec::new();
    let mut outcomes = Summary::default();
    for (round, messages) in rounds.iter().enumerate() {
        let local = &messages[..LOCAL.min(messages.len())];
        let (here, there) = if round % 2 == 0 {
            at_once(
                &mut workers,
                handler.as_ref(),
                &fixture,
                local,
                round,
                &mut to_helper,
                &mut said,
            )
        } else {
            in_turns(
                &mut workers,
                handler.as_ref(),
                local,
                messages.len() - local.len(),
                round,
                &mut to_helper,
                &mut said,
            )
        };
        let mut round_outcomes = here;
        round_outcomes += there;
        outcomes += round_outcomes;
        play.messages.extend(messages.iter().cloned());
        play.deliveries += messages.len() as u64;
        let observed = observe(&fixture, subject, outcomes);
        let refused = observed.refused();
        let order = orders(messages).into_iter().find(|order| {
            let mut candidate = history.clone();
            candidate.extend(order.iter().cloned());
            let model = subject.model(&candidate);
            model.state == observed.state
                && model
                    .refused
                    .keys()
                    .cloned()
                    .collect::<std::collections::BTreeSet<_>>()
                    == refused
        });
        let Some(order) = order else {
            let mut sent = history.clone();
            sent.extend(messages.iter().cloned());
            let in_sent_order = subject.model(&sent);
            drop(to_helper);
            let _waiting = hangs::waiting_for_process("the second process to end");
            let _ = helper.wait();
            return Err(play.violation(&format!(
                "round {round}: no serial order of its {} messages gives what the handler left ({}; the handler refused {refused:?}, the model refuses {:?}); a rule across messages was checked without a lock?",
                messages.len(),
                state_against(&observed.state, "the model in the order they were sent", &in_sent_order.state),
                in_sent_order.refused.keys().collect::<Vec<_>>()
            )));
        };
        if round_outcomes.failed + round_outcomes.duplicate + round_outcomes.dead_lettered > 0 {
            drop(to_helper);
            let _waiting = hangs::waiting_for_process("the second process to end");
            let _ = helper.wait();
            return Err(play.violation(&format!(
                "round {round}: outcomes {round_outcomes}: each message must be applied or refused, once"
            )));
        }
        history.extend(order);
        play.observed = observed;
    }
    drop(to_helper);
    let _waiting = hangs::waiting_for_process("the second process to end");
    let _ = helper.wait();
    Ok(play)
}

/// One round at once: this process's messages each by its own worker,
/// held at the [`Gate`] before their commits where writers run side by
/// side, the second process's at the same moment. Returns the outcomes
/// here and there.
fn at_once<P: Project>(
    workers: &mut [Box<dyn Inbox<P::Registry>>],
    handler: &HandlerOf<'_, P>,
    fixture: &P::Fixture,
    local: &[Message<P::Event>],
    round: usize,
    to_helper: &mut impl Write,
    said: &mut impl FnMut(&str) -> String,
) -> (Summary, Summary) {
    let start = Barrier::new(local.len() + 1);
    let gate = Gate::<P>::new(local.len(), fixture);
    let here = std::thread::scope(|scope| {
        let threads: Vec<_> = workers
            .iter_mut()
            .zip(local)
            .enumerate()
            .map(|(worker, (inbox, message))| {
                let (start, gate) = (&start, &gate);
                let context = hangs::context();
                let name = format!("worker {} of {}", worker + 1, local.len());
                let thread = std::thread::Builder::new().name(name.clone());
                let work = move || {
                    let _in = hangs::enter(context);
                    let gated = GatedHandler {
                        inner: handler,
                        gate,
                        worker,
                    };
                    let deliverer: &HandlerOf<'_, P> = if P::Fixture::CONCURRENT_WRITERS {
                        &gated
                    } else {
                        handler
                    };
                    let waiting =
                        hangs::waiting(format!("{name} at the start, waiting for the others"));
                    start.wait();
                    drop(waiting);
                    let summary =
                        deliver_all(inbox.as_mut(), deliverer, std::slice::from_ref(message));
                    gate.set(worker, Place::Gone);
                    summary
                };
                thread.spawn_scoped(scope, work).expect("start a worker")
            })
            .collect();
        tell(to_helper, &format!("go {round}"));
        let waiting = hangs::waiting("the workers to start");
        start.wait();
        drop(waiting);
        threads
            .into_iter()
            .fold(Summary::default(), |mut sum, thread| {
                sum += thread.join().expect("a worker");
                sum
            })
    });
    (here, counts(&said(&format!("serial: done {round} "))))
}

/// One round in turns: a message here, one there, and so on.
fn in_turns<P: Project>(
    workers: &mut [Box<dyn Inbox<P::Registry>>],
    handler: &HandlerOf<'_, P>,
    local: &[Message<P::Event>],
    remote: usize,
    round: usize,
    to_helper: &mut impl Write,
    said: &mut impl FnMut(&str) -> String,
) -> (Summary, Summary) {
    let (mut here, mut there) = (Summary::default(), Summary::default());
    for turn in 0..local.len().max(remote) {
        if let (Some(message), Some(worker)) = (local.get(turn), workers.get_mut(turn)) {
            here += deliver_all(worker.as_mut(), handler, std::slice::from_ref(message));
        }
        if turn < remote {
            tell(to_helper, &format!("one {round} {turn}"));
            there += counts(&said(&format!("serial: done {round} ")));
        }
    }
    (here, there)
}

fn tell(to_helper: &mut impl Write, line: &str) {
    writeln!(to_helper, "{line}").expect("talk to the second process");
    to_helper.flush().expect("talk to the second process");
}

fn counts(json: &str) -> Summary {
    summary_from_json(&serde_json::from_str(json).expect("the second process's counts"))
}

/// The second process's part: its share of every round, each delivered
/// by its own worker when told to: `go R` all of round R's at once,
/// `one R K` only the K-th.
pub(super) fn second_process_rounds<P: Project>(assignment: &Assignment<P>) {
    let rounds: Vec<Vec<Message<P::Event>>> = assignment.value["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .map(|lines| {
            from_lines(
                lines
                    .as_array()
                    .expect("lines")
                    .iter()
                    .map(|line| line.as_str().expect("a line")),
            )
        })
        .collect();
    let most = rounds.iter().map(Vec::len).max().unwrap_or(0);
    let mut workers: Vec<_> = (0..most)
        .map(|_| assignment.inbox.open(&assignment.fixture))
        .collect();
    println!("serial: ready");
    let stdin = std::io::stdin();
    for line in stdin.lock().lines().map_while(Result::ok) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (round, only) = match words.as_slice() {
            ["go", round] => (round.parse::<usize>().expect("a round"), None),
            ["one", round, turn] => (
                round.parse::<usize>().expect("a round"),
                Some(turn.parse::<usize>().expect("a turn")),
            ),
            _ => continue,
        };
        let handler = assignment.handler.as_ref();
        let chosen: Vec<(usize, &Message<P::Event>)> = rounds[round]
            .iter()
            .enumerate()
            .filter(|(at, _)| only.is_none_or(|turn| turn == *at))
            .collect();
        let outcomes = std::thread::scope(|scope| {
            let threads: Vec<_> = workers
                .iter_mut()
                .enumerate()
                .filter_map(|(at, worker)| {
                    let (_, message) = chosen.iter().find(|(chosen_at, _)| *chosen_at == at)?;
                    let message = *message;
                    let context = hangs::context();
                    let thread = std::thread::Builder::new().name(format!("worker {}", at + 1));
                    let work = move || {
                        let _in = hangs::enter(context);
                        deliver_all(worker.as_mut(), handler, std::slice::from_ref(message))
                    };
                    Some(thread.spawn_scoped(scope, work).expect("start a worker"))
                })
                .collect();
            threads
                .into_iter()
                .fold(Summary::default(), |mut sum, thread| {
                    sum += thread.join().expect("a worker");
                    sum
                })
        });
        println!("serial: done {round} {}", summary_to_json(&outcomes));
    }
}
