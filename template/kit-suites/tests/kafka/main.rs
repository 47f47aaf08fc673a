//! The consumer on a real Kafka-compatible broker, one of each test's own
//! (see `support::kafka::server`). Each test ends in exactly the once-only
//! state, and each one about redelivery checks that redeliveries really
//! happened (a run that saw none would prove nothing).
//!
//! * `duplicates`: every event published twice, first attempts failing;
//!   the message id from the header, or else from the envelope;
//! * `offsets`: a failing message holds its partition's offset back across
//!   a restart; a storage outage commits no offset;
//! * `poison`: a message that always fails is dead-lettered, and its offset
//!   passes;
//! * `processes`: `consume` killed before its offset commits and restarted,
//!   and stopped by SIGTERM;
//! * `group`: three processes in one group, one killed: its partitions
//!   move, and what it had not committed comes back as duplicates;
//! * `rebalance`: a second member joins while the first has records in
//!   its workers' hands: they finish and commit before the partitions
//!   move, so nothing comes twice;
//! * `health`: the metrics' pending count is the group's uncommitted
//!   records, and a stopped broker makes the consumer unready;
//! * `relay`: the outbox produced to a topic, keyed, acknowledged;
//! * `teeth`: known-broken sources (offsets committed before the database,
//!   the highest settled offset committed, the id taken from the offset),
//!   each caught by the scenario above that is about its mistake.
//!
//! They need `tansu` (a Kafka-compatible broker) and fail, saying how to
//! install it, without it.

#[path = "../support/mod.rs"]
mod support;

#[path = "../kit/mod.rs"]
mod kit;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use {{crate_name}}::event::Event;
use {{crate_name}}::handlers::{AnyHandler, Handlers};
use {{crate_name}}::inbox::{Inbox, StorageError};
use {{crate_name}}::pipeline::{self, Report};
use {{crate_name}}::source::kafka::Counts;
use {{crate_name}}::source::{Source, Stop};

use broken::{BrokenSource, Mistake};
use kit::consume::{in_process_options, real_inbox};
use support::kafka::Broker;

/// A source of this project's events, as the pipeline takes it.
type EventSource = Box<dyn Source<Event>>;

/// How long a test waits for a consumer to reach what it waits for before
/// it gives up: a bound for a hung run, far above any real one.
const PATIENCE: Duration = Duration::from_secs(120);

/// The group every in-process consumer of these tests joins.
const GROUP: &str = "consumer";

/// The source a test consumes with.
#[derive(Clone, Copy, Debug)]
enum SourceKind {
    Real,
    Broken(Mistake),
}

/// What a consumer saw, as its source counted it.
#[derive(Debug)]
struct Seen {
    report: Report,
    /// Messages the source handed to the workers again.
    redelivered: u64,
    /// Messages settled as dead letters.
    parked: u64,
    /// Partitions revoked from it.
    revoked: u64,
    /// Whether what the test waited for happened.
    reached: bool,
}

/// A consumer running in this process, as a member of [`GROUP`].
struct Running {
    stop: Arc<Stop>,
    run: tokio::task::JoinHandle<anyhow::Result<Report>>,
    finish: Box<dyn FnOnce() + Send>,
    counts: Option<Arc<Counts>>,
}

impl Running {
    /// Joins the group with a source of `kind` and consumes the events
    /// topic with `handlers`, opening inboxes with `open`.
    fn start<I, F>(
        broker: &Broker,
        kind: SourceKind,
        handlers: Vec<Arc<AnyHandler>>,
        open: F,
    ) -> Self
    where
        I: Inbox<Handlers> + 'static,
        F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
    {
        let options = broker.options(GROUP);
        let (source, counts, finish): (EventSource, _, Box<dyn FnOnce() + Send>) = match kind {
            SourceKind::Real => {
                let (source, committer) =
                    broker.block_on(options.connect()).expect("join the group");
                let counts = Some(source.counts());
                (
                    Box::new(source),
                    counts,
                    Box::new(move || committer.finish()),
                )
            }
            SourceKind::Broken(mistake) => {
                let source = BrokenSource::connect(&options, mistake);
                let finish = source.finisher();
                (Box::new(source), None, Box::new(finish))
            }
        };
        let stop = Arc::new(Stop::default());
        let pipeline_options = in_process_options();
        let run = broker.spawn(pipeline::run_until(
            source,
            handlers,
            open,
            pipeline_options,
            stop.clone(),
        ));
        Self {
            stop,
            run,
            finish,
            counts,
        }
    }

    /// Stops it, commits what settled, leaves the group; what it saw.
    fn stop(self, broker: &Broker, reached: bool) -> Seen {
        self.stop.raise();
        let report = broker
            .block_on(self.run)
            .expect("the pipeline task")
            .expect("the pipeline");
        (self.finish)();
        let count = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let counts = self.counts.as_ref();
        Seen {
            report,
            redelivered: counts.map_or(0, |c| count(&c.redelivered)),
            parked: counts.map_or(0, |c| count(&c.parked)),
            revoked: counts.map_or(0, |c| count(&c.revoked)),
            reached,
        }
    }
}

/// Waits until `done` says so, up to [`PATIENCE`]; whether it did.
fn wait_for(mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !done() {
        if started.elapsed() >= PATIENCE {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Consumes the events topic in this process as a member of [`GROUP`],
/// with `handlers`, opening inboxes with `open`, until `done` says so (or
/// [`PATIENCE`] ran out); then stops, commits what settled, and returns
/// what it saw.
fn consume_until<I, F>(
    broker: &Broker,
    kind: SourceKind,
    handlers: Vec<Arc<AnyHandler>>,
    open: F,
    done: impl FnMut() -> bool,
) -> Seen
where
    I: Inbox<Handlers> + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let running = Running::start(broker, kind, handlers, open);
    let reached = wait_for(done);
    running.stop(broker, reached)
}

/// Like [`consume_until`], until the group committed every record.
fn consume_until_drained<I, F>(
    broker: &Broker,
    kind: SourceKind,
    handlers: Vec<Arc<AnyHandler>>,
    open: F,
) -> Seen
where
    I: Inbox<Handlers> + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let seen = consume_until(broker, kind, handlers, open, || {
        broker.uncommitted(GROUP) == 0
    });
    assert!(
        seen.reached,
        "the consumer did not commit the whole topic in {PATIENCE:?}: {seen:?}"
    );
    seen
}

mod broken;
mod duplicates;
mod group;
mod health;
mod offsets;
mod poison;
mod processes;
mod rebalance;
mod relay;
mod teeth;
