//! **Through the pipeline**: the real pipeline (workers, batches, routing,
//! settling) fed by a source double, the way every broker variant feeds
//! it, so that each variant proves the same two promises with or without
//! a broker:
//!
//! * **settled after commit**: when a message is settled, what the verdict
//!   says is already committed, as another connection sees it: a `Done` or
//!   `Parked` message has its inbox row, a `Retry` one has none (its claim
//!   given back) and its failure counted. Each message is settled once.
//! * **routed by partition key**: every message about one thing (equal
//!   partition keys) goes through one worker, in the source's order; so
//!   the end state is the model's for the source's order itself, not only
//!   for some order.
//!
//! The first attempt at two messages fails, and whatever was settled
//! `Retry` is delivered again afterwards, as a broker would.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::handler::Registry;
use inbox_kit_runtime::inbox::{Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::{self, ByPartitionKey, Options, Route, Summary};
use inbox_kit_runtime::source::{Acknowledge, Incoming, Source, Stop, Verdict};
use inbox_kit_runtime::storage::StorageError;

use crate::harness::Raw;
use crate::harness::faults::FailFirstAttempt;
use crate::harness::{AnyHandlerOf, EventOf, Fixture, PlayOf, Project};
use crate::harness::{
    Expected, Play, RealInbox, Subject, Violation, facts, fixture_for, hangs, observe,
};

/// Workers the pipeline runs.
const WORKERS: usize = 4;

/// What was seen when one message was settled.
#[derive(Clone, Debug)]
pub struct Settled {
    pub id: String,
    pub verdict: Verdict,
    /// Whether another connection saw its inbox row at that moment.
    pub recorded: bool,
    /// Failures another connection saw counted for it at that moment.
    pub failures: u32,
}

/// The settles of one run, shared by the acknowledgement handles.
struct Witness<P: Project> {
    consumer: &'static str,
    /// Another connection than the workers'.
    raw: Arc<Mutex<Box<dyn Raw<P>>>>,
    log: Arc<Mutex<Vec<Settled>>>,
}

// Written out: a derive would ask `P` itself to be `Clone`.
impl<P: Project> Clone for Witness<P> {
    fn clone(&self) -> Self {
        Self {
            consumer: self.consumer,
            raw: self.raw.clone(),
            log: self.log.clone(),
        }
    }
}

impl<P: Project> Witness<P> {
    fn saw(&self, id: &str, verdict: Verdict) {
        let mut raw = self.raw.lock().expect("witness");
        let recorded = raw
            .is_recorded(self.consumer, id)
            .expect("look at the inbox");
        let failures = raw
            .failures(self.consumer, id)
            .expect("look at the attempts");
        drop(raw);
        self.log.lock().expect("log").push(Settled {
            id: id.to_owned(),
            verdict,
            recorded,
            failures,
        });
    }
}

/// An acknowledgement handle that checks, when it is settled, what is
/// committed.
struct Checked<P: Project> {
    id: String,
    witness: Witness<P>,
}

impl<P: Project> Acknowledge for Checked<P> {
    fn settle(self: Box<Self>, verdict: Verdict) {
        self.witness.saw(&self.id, verdict);
    }
}

/// A source double: `messages` in chunks of five, each with a checking
/// handle, then the end.
pub struct Scripted<P: Project> {
    messages: Vec<Message<P::Event>>,
    witness: Witness<P>,
}

impl<P: Project> Source<P::Event> for Scripted<P> {
    fn run(
        self: Box<Self>,
        chunks: &Sender<Vec<Incoming<P::Event>>>,
        _stop: &Stop,
    ) -> anyhow::Result<u64> {
        let Self { messages, witness } = *self;
        for chunk in messages.chunks(5) {
            let incoming = chunk
                .iter()
                .map(|message| Incoming {
                    message: message.clone(),
                    delivered: 1,
                    ack: Box::new(Checked {
                        id: message.id.to_string(),
                        witness: witness.clone(),
                    }),
                })
                .collect();
            if chunks.send(incoming).is_err() {
                anyhow::bail!("every worker stopped before the source ended");
            }
        }
        Ok(0)
    }
}

/// How a source is given to the pipeline: as it is, or broken.
pub trait SourceUnderTest<E>: Sync {
    fn name(&self) -> String;
    fn wrap(&self, source: Box<dyn Source<E>>) -> Box<dyn Source<E>>;
}

/// The source as it is.
pub struct RealSource;

impl<E> SourceUnderTest<E> for RealSource {
    fn name(&self) -> String {
        "a source that settles what the pipeline says".into()
    }
    fn wrap(&self, source: Box<dyn Source<E>>) -> Box<dyn Source<E>> {
        source
    }
}

/// The real inbox, recording which worker delivered what.
struct Recording<R: Registry> {
    inner: Box<dyn Inbox<R>>,
    worker: usize,
    log: Arc<Mutex<Vec<(usize, String)>>>,
    /// The scenario it delivers for (the pipeline's threads are its own).
    context: Option<hangs::Context>,
}

impl<R: Registry> Inbox<R> for Recording<R> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        let mut log = self.log.lock().expect("routing log");
        log.extend(
            batch
                .iter()
                .map(|delivery| (self.worker, delivery.message.id.to_string())),
        );
        drop(log);
        let _in = hangs::enter(self.context.clone());
        let _waiting = hangs::waiting(format!(
            "pipeline worker {} delivering {} messages",
            self.worker + 1,
            batch.len()
        ));
        self.inner.deliver_batch(batch)
    }
}

/// What one pipeline run left: the settles seen and the deliveries by
/// worker.
struct Run {
    summary: Summary,
    settled: Vec<Settled>,
    routed: Vec<(usize, String)>,
}

fn run_pipeline<P: Project>(
    fixture: &P::Fixture,
    handler: Arc<AnyHandlerOf<P>>,
    messages: Vec<Message<P::Event>>,
    source: &dyn SourceUnderTest<P::Event>,
    route: Arc<dyn Route<P::Event>>,
) -> Run {
    let witness = Witness {
        consumer: handler.consumer(),
        raw: Arc::new(Mutex::new(fixture.raw())),
        log: Arc::default(),
    };
    let routed: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
    let workers = Arc::new(AtomicUsize::new(0));
    let open = {
        let (routed, database) = (routed.clone(), fixture.location());
        let context = hangs::context();
        move || -> Result<Recording<P::Registry>, StorageError> {
            let worker = workers.fetch_add(1, Ordering::SeqCst);
            Ok(Recording {
                inner: P::Fixture::attach(&database).inbox(Policy::default()),
                worker,
                log: routed.clone(),
                context: context.clone(),
            })
        }
    };
    let options = Options::<P::Registry> {
        workers: WORKERS,
        batch_size: 8,
        route,
        ..Options::default()
    };
    let scripted = Box::new(Scripted::<P> {
        messages,
        witness: witness.clone(),
    });
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let _waiting = hangs::waiting("the pipeline to deliver and settle every message");
    let report = runtime
        .block_on(pipeline::run_until(
            source.wrap(scripted),
            vec![handler],
            open,
            options,
            Arc::new(Stop::default()),
        ))
        .expect("the pipeline");
    let settled = witness.log.lock().expect("log").clone();
    let routed = routed.lock().expect("routing log").clone();
    Run {
        summary: report.summary,
        settled,
        routed,
    }
}

pub fn through_the_pipeline<S: Subject>(
    subject: &S,
    source: &dyn SourceUnderTest<EventOf<S>>,
    route: Arc<dyn Route<EventOf<S>>>,
) -> Result<PlayOf<S>, Violation> {
    let _scenario = hangs::scenario(format!(
        "through the pipeline, {}, for `{}`",
        source.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(&RealInbox::BATCHED, &[subject]);
    let mut messages = facts(subject, "m-", 40);
    let mut round = 0;
    while !subject.contended(round).is_empty() && round < 4 {
        messages.extend(subject.contended(round));
        round += 1;
    }
    let refused = subject.model(&messages).refused;
    let failing: HashSet<String> = messages
        .iter()
        .filter(|message| !refused.contains_key(message.id.as_str()))
        .take(2)
        .map(|message| message.id.to_string())
        .collect();
    let handler: Arc<AnyHandlerOf<S::Project>> =
        Arc::new(FailFirstAttempt::new(subject.handler(), failing));
    let first = run_pipeline::<S::Project>(
        &fixture,
        handler.clone(),
        messages.clone(),
        source,
        route.clone(),
    );
    let mut play = Play {
        scenario: format!(
            "through the pipeline, {WORKERS} workers, {route:?}, {}",
            source.name()
        ),
        consumer: subject.handler().consumer().to_owned(),
        messages: messages.clone(),
        deliveries: messages.len() as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, first.summary),
    };
    let mut problems = settle_problems(&messages, &first.settled);
    problems.extend(routing_problems::<<S::Project as Project>::Registry>(
        &messages,
        &first.routed,
    ));
    if !problems.is_empty() {
        return Err(play.violation(&problems.join("; ")));
    }
    let retried: HashSet<&str> = first
        .settled
        .iter()
        .filter(|settled| settled.verdict == Verdict::Retry)
        .map(|settled| settled.id.as_str())
        .collect();
    let redelivered: Vec<Message<EventOf<S>>> = messages
        .iter()
        .filter(|message| retried.contains(message.id.as_str()))
        .cloned()
        .collect();
    let second = run_pipeline::<S::Project>(&fixture, handler, redelivered.clone(), source, route);
    let problems = settle_problems(&redelivered, &second.settled);
    let mut outcomes = first.summary;
    outcomes += second.summary;
    outcomes.failed = outcomes.failed.saturating_sub(redelivered.len() as u64);
    play.observed = observe(&fixture, subject, outcomes);
    if !problems.is_empty() {
        return Err(play.violation(&format!("the redelivery: {}", problems.join("; "))));
    }
    // In the source's order: routing keeps it for every partition key.
    let expected = Expected::of(subject, &messages)?;
    let end = &play.observed;
    let problems = expected.problems(&end.state, &end.refused());
    if !problems.is_empty() {
        return Err(play.violation(&format!(
            "the end state is not the source's order applied once: {}",
            problems.join("; ")
        )));
    }
    Ok(play)
}

/// What is wrong with the settles seen for `messages`.
fn settle_problems<E>(messages: &[Message<E>], settled: &[Settled]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for seen in settled {
        *times.entry(seen.id.as_str()).or_default() += 1;
        let committed = match seen.verdict {
            Verdict::Done | Verdict::Parked => seen.recorded,
            Verdict::Retry => !seen.recorded && seen.failures > 0,
            Verdict::Abandoned => true,
        };
        if !committed {
            problems.push(format!(
                "{} was settled {:?} before that was committed (inbox row seen: {}, failures seen: {})",
                seen.id, seen.verdict, seen.recorded, seen.failures
            ));
        }
    }
    for message in messages {
        match times.get(message.id.as_str()) {
            Some(1) => {}
            other => problems.push(format!(
                "{} was settled {} times",
                message.id,
                other.copied().unwrap_or(0)
            )),
        }
    }
    problems.truncate(5);
    problems
}

/// What is wrong with how the pipeline spread `messages` over workers.
fn routing_problems<R: Registry>(
    messages: &[Message<R::Event>],
    routed: &[(usize, String)],
) -> Vec<String> {
    let position: BTreeMap<&str, usize> = messages
        .iter()
        .enumerate()
        .map(|(at, message)| (message.id.as_str(), at))
        .collect();
    let mut by_key: BTreeMap<u64, Vec<(usize, usize)>> = BTreeMap::new();
    let mut first_seen = HashSet::new();
    for (worker, id) in routed {
        if !first_seen.insert(id.as_str()) {
            continue;
        }
        let at = position[id.as_str()];
        by_key
            .entry(R::partition_key(&messages[at].event))
            .or_default()
            .push((*worker, at));
    }
    let mut problems = Vec::new();
    for (key, deliveries) in by_key {
        let workers: HashSet<usize> = deliveries.iter().map(|(worker, _)| *worker).collect();
        if workers.len() > 1 {
            problems.push(format!(
                "the messages with partition key {key} went through {} workers: messages about one thing must go through one, in order",
                workers.len()
            ));
        }
        if !deliveries.windows(2).all(|pair| pair[0].1 < pair[1].1) {
            problems.push(format!(
                "the messages with partition key {key} were delivered out of the source's order"
            ));
        }
    }
    problems
}

/// The routing the runtime's pipeline uses by default, for
/// [`through_the_pipeline`].
pub fn real_route<P: Project>() -> Arc<dyn Route<P::Event>> {
    Arc::new(ByPartitionKey::<P::Registry>::default())
}
