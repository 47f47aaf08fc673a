//! Running a consumer: take deliveries from a source, hand them to workers,
//! settle each message after its transaction, count what happened.
//!
//! ```text
//! source ──▶ router ──(a bounded queue each)──▶ worker 1 ─┐
//!   │        by partition key                  worker 2 ─┼─▶ the database
//!   ▼                                          worker N ─┘
//! rejects                                         │
//!                                                 ▼ after each commit
//!                                       settle: done / retry / parked
//! ```
//!
//! The router gives every message about the same thing (its event's
//! partition key: an account) to the same worker, so workers never fight
//! over rows and the messages about one thing apply in the source's order
//! (see [`ByPartitionKey`]; another [`Route`] can be given in [`Options`]).
//! Each worker owns one connection and takes messages in batches, bounded
//! by count and by time, so a busy source commits rarely and a quiet one
//! still commits within a few milliseconds. A message is settled only after
//! the transaction holding its deliveries returned (see [`crate::source`]). The
//! queue is bounded, so memory stays flat however much the source holds.
//!
//! The source and the workers block (files, database clients), so they run
//! on tokio's blocking pool; the async side waits for them and for signals.

mod summary;

pub use summary::Summary;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use crossbeam_channel::{Receiver, Sender};
use tracing::Span;

use crate::delivery::{Delivery, Inbox};
use crate::handler::{Registry, Subscriber};
use crate::inbox::Outcome;
use crate::message::Message;
use crate::meter::{BatchEnd, Meter, Unmetered};
use crate::progress::Progress;
use crate::source::{Incoming, Source, Stop, Verdict};
use crate::storage::StorageError;
use crate::trace;

/// Messages per transaction unless told otherwise. Best of three runs of the
/// `run` binary on the benchmark's 200,000 lines, one worker: 64 gave about
/// 240,000 deliveries/s, 256 about 310,000/s; larger batches added little
/// and hold the write lock longer. (A generated project's BENCHMARKS.md has
/// the full table.)
pub const DEFAULT_BATCH_SIZE: u16 = 256;

/// Longest wait for a batch to fill, in milliseconds, unless told otherwise:
/// the latency a quiet source pays for batching.
pub const DEFAULT_BATCH_WAIT_MS: u16 = 5;

/// Worker threads unless told otherwise: one, because on SQLite extra
/// workers add lock handoffs, not throughput. A project's command line
/// passes its own default (`--workers`).
pub const DEFAULT_WORKERS: usize = 1;

/// How each line of `--progress-lines` starts.
pub const PROGRESS_LINE: &str = "progress: committed a batch";

/// Which worker handles a message of events `E`.
pub trait Route<E>: Send + Sync + std::fmt::Debug {
    /// The worker, `0..workers`, that gets `message`.
    fn worker(&self, message: &Message<E>, workers: usize) -> usize;
}

/// The default route: by the event's partition key
/// ([`Registry::partition_key`]), so that the messages about one thing (an
/// account) go to one worker, in the order the source gave them. Two
/// refunds of one payment are then applied one after the other, in that
/// order; and two workers never wait for each other's row locks.
pub struct ByPartitionKey<R>(std::marker::PhantomData<fn() -> R>);

impl<R> Default for ByPartitionKey<R> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

// Written out: a derive would ask `R` itself to be `Debug`.
impl<R> std::fmt::Debug for ByPartitionKey<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ByPartitionKey")
    }
}

impl<R: Registry> Route<R::Event> for ByPartitionKey<R> {
    fn worker(&self, message: &Message<R::Event>, workers: usize) -> usize {
        let key = R::partition_key(&message.event);
        usize::try_from(key % workers.max(1) as u64).unwrap_or(0)
    }
}

/// How a run is spread over workers and transactions, for the project's
/// handlers `R`.
pub struct Options<R: Registry> {
    /// Worker threads, each with its own database connection.
    pub workers: usize,
    /// Which worker handles which message.
    pub route: Arc<dyn Route<R::Event>>,
    /// The most messages one transaction takes.
    pub batch_size: usize,
    /// How long a worker waits for a batch to fill before committing what it
    /// has.
    pub batch_wait: Duration,
    /// Where a line goes after every committed batch, for scripts and
    /// tests that follow a run (the crash tests kill a consumer at such
    /// points): [`PROGRESS_LINE`] on stderr, or nowhere.
    pub progress: Progress,
    /// What watches every transaction (metrics); nothing by default.
    pub meter: Arc<dyn Meter<R>>,
}

// Written out: a derive would ask `R` itself to be `Clone` and `Debug`.
impl<R: Registry> Clone for Options<R> {
    fn clone(&self) -> Self {
        Self {
            workers: self.workers,
            route: self.route.clone(),
            batch_size: self.batch_size,
            batch_wait: self.batch_wait,
            progress: self.progress.clone(),
            meter: self.meter.clone(),
        }
    }
}

impl<R: Registry> std::fmt::Debug for Options<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("workers", &self.workers)
            .field("route", &self.route)
            .field("batch_size", &self.batch_size)
            .field("batch_wait", &self.batch_wait)
            .field("progress", &self.progress)
            .field("meter", &self.meter)
            .finish()
    }
}

impl<R: Registry> Default for Options<R> {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            route: Arc::new(ByPartitionKey::<R>::default()),
            batch_size: usize::from(DEFAULT_BATCH_SIZE),
            batch_wait: Duration::from_millis(u64::from(DEFAULT_BATCH_WAIT_MS)),
            progress: Progress::default(),
            meter: Arc::new(Unmetered),
        }
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub summary: Summary,
    /// A signal stopped the run before its source ended.
    pub interrupted: bool,
}

/// Consumes `source` until it ends (or a signal stops it) and returns the
/// counts.
///
/// `open_inbox` is called once per worker, on the worker's thread.
pub async fn run<R, I, F>(
    source: Box<dyn Source<R::Event>>,
    handlers: Vec<Arc<R::Handler<'static>>>,
    open_inbox: F,
    options: Options<R>,
) -> anyhow::Result<Report>
where
    R: Registry,
    R::Event: Send + 'static,
    I: Inbox<R> + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let stop = Arc::new(Stop::default());
    let signals = tokio::spawn(crate::stop::on_signals(stop.clone()));
    let report = run_until(source, handlers, open_inbox, options, stop).await;
    signals.abort();
    report
}

/// Like [`run`], stopped by `stop` instead of signals (for embedding, and
/// for tests that stop a broker source once it has nothing left).
pub async fn run_until<R, I, F>(
    source: Box<dyn Source<R::Event>>,
    handlers: Vec<Arc<R::Handler<'static>>>,
    open_inbox: F,
    options: Options<R>,
    stop: Arc<Stop>,
) -> anyhow::Result<Report>
where
    R: Registry,
    R::Event: Send + 'static,
    I: Inbox<R> + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let workers = options.workers.max(1);
    let (chunks_in, chunks_out) = crossbeam_channel::bounded(workers * 4);
    let (queues_in, queues_out): (Vec<_>, Vec<_>) =
        (0..workers).map(|_| crossbeam_channel::bounded(4)).unzip();
    let open_inbox = Arc::new(open_inbox);
    let handlers = Arc::new(handlers);

    let workers: Vec<_> = queues_out
        .into_iter()
        .map(|queue| {
            let (open_inbox, handlers) = (open_inbox.clone(), handlers.clone());
            let options = options.clone();
            tokio::task::spawn_blocking(move || -> anyhow::Result<Summary> {
                let inbox =
                    open_inbox().context("could not open a worker's database connection")?;
                Ok(work(inbox, &queue, &handlers, &options))
            })
        })
        .collect();
    let routing = options.route.clone();
    let router =
        tokio::task::spawn_blocking(move || route(routing.as_ref(), &chunks_out, &queues_in));
    let reader = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || source.run(&chunks_in, &stop)
    });

    let mut summary = Summary {
        rejected: reader.await??,
        ..Summary::default()
    };
    router.await?;
    for worker in workers {
        summary += worker.await??;
    }
    Ok(Report {
        summary,
        interrupted: stop.is_raised(),
    })
}

/// Gives each message to the worker `routing` names (see
/// [`ByPartitionKey`]), keeping the source's order within each worker.
fn route<E>(
    routing: &dyn Route<E>,
    chunks: &Receiver<Vec<Incoming<E>>>,
    queues: &[Sender<Vec<Incoming<E>>>],
) {
    for chunk in chunks {
        let mut split: Vec<Vec<Incoming<E>>> = queues.iter().map(|_| Vec::new()).collect();
        for incoming in chunk {
            let worker = routing
                .worker(&incoming.message, queues.len())
                .min(queues.len() - 1);
            split[worker].push(incoming);
        }
        for (queue, part) in queues.iter().zip(split) {
            // A worker stops only when it cannot open its connection; its
            // messages are then never settled, and a broker redelivers them.
            if !part.is_empty() && queue.send(part).is_err() {
                tracing::warn!("a worker is gone; its messages will be delivered again");
            }
        }
    }
}

/// A worker: commits batches until its queue is closed and drained.
fn work<R: Registry, I: Inbox<R>>(
    mut inbox: I,
    chunks: &Receiver<Vec<Incoming<R::Event>>>,
    handlers: &[Arc<R::Handler<'static>>],
    options: &Options<R>,
) -> Summary {
    let mut summary = Summary::default();
    let mut queued = VecDeque::new();
    let mut batch = Vec::with_capacity(options.batch_size);
    while next_batch(chunks, &mut queued, &mut batch, options) {
        let received: Vec<Span> = batch.iter_mut().map(trace::receive).collect();
        let mut deliveries = Vec::new();
        // For each message: how many of `deliveries` are its own.
        let mut fan_out = Vec::with_capacity(batch.len());
        for incoming in &batch {
            let before = deliveries.len();
            deliveries.extend(
                handlers
                    .iter()
                    .filter(|handler| handler.subscribes_to(&incoming.message.event))
                    .map(|handler| Delivery {
                        handler: R::lend(handler),
                        message: &incoming.message,
                        delivered: incoming.delivered,
                    }),
            );
            fan_out.push(deliveries.len() - before);
        }
        let delivering: Vec<Span> = received
            .iter()
            .zip(&fan_out)
            .flat_map(|(receive, &count)| std::iter::repeat_n(receive, count))
            .zip(&deliveries)
            .map(|(receive, delivery)| trace::deliver(receive, delivery))
            .collect();
        options.meter.batch_began();
        let began = Instant::now();
        let delivered = inbox.deliver_batch(&deliveries);
        let how = match &delivered {
            Ok(outcomes) => BatchEnd::Committed(outcomes),
            Err(_) => BatchEnd::RolledBack,
        };
        options.meter.batch_ended(&deliveries, how, began.elapsed());
        trace::ended(&delivering, how);
        drop(delivering);
        let verdicts: Vec<Verdict> = match delivered {
            Ok(outcomes) => {
                outcomes.iter().for_each(|outcome| summary.count(outcome));
                options.progress.report(format_args!(
                    "{PROGRESS_LINE} deliveries={}",
                    outcomes.len()
                ));
                let mut outcomes = outcomes.into_iter();
                fan_out
                    .iter()
                    .map(|&count| verdict(outcomes.by_ref().take(count)))
                    .collect()
            }
            Err(error) => {
                tracing::error!(%error, deliveries = deliveries.len(), "batch rolled back; its messages apply on redelivery");
                summary.failed += deliveries.len() as u64;
                vec![Verdict::Abandoned; batch.len()]
            }
        };
        drop(deliveries);
        for (incoming, verdict) in batch.drain(..).zip(verdicts) {
            incoming.ack.settle(verdict);
        }
        drop(received);
    }
    summary
}

/// A message's verdict from the outcomes of its deliveries.
fn verdict(outcomes: impl Iterator<Item = Outcome>) -> Verdict {
    let mut verdict = Verdict::Done;
    for outcome in outcomes {
        match outcome {
            Outcome::DeadLettered(_) | Outcome::Refused(_) => return Verdict::Parked,
            Outcome::Failed(_) => verdict = Verdict::Retry,
            Outcome::Applied | Outcome::Duplicate => {}
        }
    }
    verdict
}

/// Fills `batch` with up to `batch_size` messages: those already queued
/// locally first, then chunks from the source, waiting at most `batch_wait`
/// once the batch has its first message. `false` once the source is done
/// and nothing is left.
fn next_batch<R: Registry>(
    chunks: &Receiver<Vec<Incoming<R::Event>>>,
    queued: &mut VecDeque<Incoming<R::Event>>,
    batch: &mut Vec<Incoming<R::Event>>,
    options: &Options<R>,
) -> bool {
    let mut deadline = None;
    while batch.len() < options.batch_size {
        if let Some(incoming) = queued.pop_front() {
            batch.push(incoming);
            deadline.get_or_insert_with(|| Instant::now() + options.batch_wait);
            continue;
        }
        let received = match deadline {
            None => chunks.recv().ok(),
            Some(deadline) => chunks.recv_deadline(deadline).ok(),
        };
        match received {
            Some(chunk) => queued.extend(chunk),
            None => break,
        }
    }
    !batch.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events that are their own partition key.
    struct Keys;

    impl Registry for Keys {
        type Event = u64;
        type Handler<'a> = dyn Subscriber<u64> + 'a;
        fn has_set_based(_: &Self::Handler<'_>) -> bool {
            false
        }
        fn encode(key: &u64) -> (&'static str, String) {
            ("Key", key.to_string())
        }
        fn partition_key(key: &u64) -> u64 {
            *key
        }
        fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a> {
            handler
        }
    }

    #[test]
    fn routing_by_partition_key_keeps_one_key_on_one_worker() {
        use crate::message::MessageId;
        let message = |id: &str, key| Message {
            id: MessageId::new(id).unwrap(),
            event: key,
            trace_parent: None,
        };
        let route = ByPartitionKey::<Keys>::default();
        for workers in [1, 3, 4] {
            let a = route.worker(&message("a", 7), workers);
            assert_eq!(route.worker(&message("b", 7), workers), a);
            assert!(a < workers);
        }
        assert_ne!(
            route.worker(&message("a", 1), 4),
            route.worker(&message("b", 2), 4)
        );
        assert_eq!(
            route.worker(&message("a", 9), 0),
            0,
            "no workers: the first"
        );
    }

    /// A route that names a worker past the last one.
    #[derive(Debug)]
    struct PastTheEnd;

    impl Route<u64> for PastTheEnd {
        fn worker(&self, _: &Message<u64>, workers: usize) -> usize {
            workers + 5
        }
    }

    struct Unsettled;

    impl crate::source::Acknowledge for Unsettled {
        fn settle(self: Box<Self>, _: Verdict) {}
    }

    #[test]
    fn a_worker_past_the_last_one_is_the_last_one() {
        use crate::message::MessageId;
        let incoming = |id: &str| Incoming {
            message: Message {
                id: MessageId::new(id).unwrap(),
                event: 1,
                trace_parent: None,
            },
            delivered: 1,
            ack: Box::new(Unsettled),
        };
        let (chunks_in, chunks_out) = crossbeam_channel::unbounded();
        let (queues_in, queues_out): (Vec<_>, Vec<_>) =
            (0..2).map(|_| crossbeam_channel::unbounded()).unzip();
        chunks_in.send(vec![incoming("a"), incoming("b")]).unwrap();
        drop(chunks_in);
        route(&PastTheEnd, &chunks_out, &queues_in);
        assert!(queues_out[0].try_recv().is_err());
        let last: Vec<Incoming<u64>> = queues_out[1].try_recv().expect("the last worker's");
        let ids: Vec<&str> = last.iter().map(|i| i.message.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"], "in the source's order");
    }

    #[test]
    fn a_message_is_done_only_when_every_delivery_is() {
        use Outcome::*;
        let cases = [
            (vec![], Verdict::Done),
            (vec![Applied, Duplicate], Verdict::Done),
            (vec![Applied, Failed("x".into())], Verdict::Retry),
            (
                vec![Failed("x".into()), DeadLettered("y".into())],
                Verdict::Parked,
            ),
            (vec![DeadLettered("y".into()), Applied], Verdict::Parked),
            (vec![Applied, Refused("z".into())], Verdict::Parked),
        ];
        for (outcomes, expected) in cases {
            assert_eq!(
                verdict(outcomes.clone().into_iter()),
                expected,
                "{outcomes:?}"
            );
        }
    }
}
