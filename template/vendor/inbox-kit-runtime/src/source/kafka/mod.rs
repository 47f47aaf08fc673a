//! Kafka as a source: the topics' records, read as a member of a consumer
//! group, each partition's offset committed only after the database.
//!
//! A record's value is one JSON envelope, exactly like a line of a file of
//! lines (see [`crate::envelope`]). The message id is the producer's: the
//! `message-id` header if the record has one, otherwise the envelope's
//! `id`. Never the topic, partition or offset: a producer's retry and a
//! republished event land at new offsets and must still be duplicates.
//! Producers key records by the event's partition key (the account), so
//! the events about one account are in one partition, in order, and the
//! pipeline routes them to one worker by the same key.
//!
//! Settling (see `source`): Kafka has one committed offset per partition
//! and no per-message acknowledgement, so
//!
//! * `Done` and `Parked` settle the offset; every 100 ms, every partition
//!   whose contiguous prefix of settled offsets grew commits it
//!   (the runtime crate's `offsets`), without waiting for the broker's answer (a lost
//!   commit is covered by the next one, or costs duplicates after a crash;
//!   never a message). Before a partition is released, and when the
//!   consumer stops, the commit waits for the broker. The database
//!   committed first, always.
//! * `Retry` and `Abandoned` keep the offset unsettled, holding the
//!   partition's commit back, and the source hands the message to the
//!   workers again after a growing wait ([`crate::source::retry_delay`]),
//!   until it applies or the inbox dead-letters it (then it is `Parked`).
//! * A rebalance that revokes partitions first waits for their messages
//!   in the workers' hands, commits what settled, and forgets the rest
//!   (the next owner reads it again from the committed offset: duplicates,
//!   which the inbox absorbs).
//!
//! A record's delivery count is 1 the first time and grows with each retry
//! here. Kafka itself does not count, so a message that kills the process
//! is not recognised as such after a restart (it starts at 1 again).

mod probe;
mod setup;

pub use crate::offsets;
pub use offsets::{Offsets, Partition};
pub use probe::KafkaProbe;
pub use setup::{KafkaOptions, MESSAGE_ID_HEADER};

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::{BorrowedMessage, Headers};
use rdkafka::{ClientContext, Message as _, Offset, TopicPartitionList};

use super::{Acknowledge, Incoming, Source, Stop, Verdict, retry_delay};
use crate::envelope::{Wire, parse_line};
use crate::message::{Message, MessageId, TRACEPARENT};
use crate::progress::note;

/// Records handed to the workers at once, at most.
const CHUNK: usize = 256;

/// How long a poll waits for records: the most a stop, a settle's commit
/// or a due retry waits for the poll under way.
const POLL_WAIT: Duration = Duration::from_millis(50);

/// How often the loop commits what settled: often enough that a restart
/// redelivers little, seldom enough that commits cost the broker little.
const COMMIT_EVERY: Duration = Duration::from_millis(100);

/// How long a revoked partition's messages in the workers' hands are
/// waited for before the partition is released anyway (they come back to
/// the next owner as duplicates).
const REVOKE_PATIENCE: Duration = Duration::from_secs(30);

/// A member of a consumer group, subscribed, ready to be consumed.
pub struct KafkaSource<E: Send + 'static> {
    consumer: Arc<BaseConsumer<Rebalancing<E>>>,
    exit_when_idle: Option<Duration>,
}

/// Commits what settles after the source stopped reading; see
/// [`Committer::finish`].
pub struct Committer<E: Send + 'static> {
    consumer: Arc<BaseConsumer<Rebalancing<E>>>,
}

/// Messages counted while consuming.
#[derive(Debug, Default)]
pub struct Counts {
    /// Messages handed to the workers again (retries of failed ones).
    pub redelivered: AtomicU64,
    /// Messages settled as applied (or duplicates).
    pub done: AtomicU64,
    /// Messages settled as dead letters (their offset passes).
    pub parked: AtomicU64,
    /// Partitions revoked by a rebalance (or by leaving the group), each
    /// released once its messages in the workers' hands settled.
    pub revoked: AtomicU64,
    /// Offset commits sent.
    pub commits: AtomicU64,
    /// Offset commits the broker refused (a later one covers them).
    pub failed_commits: AtomicU64,
}

/// What a settled message's handle reports to the source.
struct Settle<E> {
    partition: Partition,
    offset: i64,
    verdict: Verdict,
    message: Message<E>,
    delivered: u32,
}

/// A message waiting to be handed to the workers again.
struct Due<E> {
    at: Instant,
    settle: Settle<E>,
}

impl<E> PartialEq for Due<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl<E> Eq for Due<E> {}
impl<E> PartialOrd for Due<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Due<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

/// What the source and its rebalance callbacks share.
struct Ledger<E> {
    offsets: Offsets,
    /// Failed messages, soonest first.
    retries: BinaryHeap<Reverse<Due<E>>>,
}

impl<E> Default for Ledger<E> {
    fn default() -> Self {
        Self {
            offsets: Offsets::default(),
            retries: BinaryHeap::new(),
        }
    }
}

/// The consumer's context: its shared state, and the rebalance callbacks
/// that finish a revoked partition's work before it is released.
pub struct Rebalancing<E> {
    ledger: Mutex<Ledger<E>>,
    settles: Receiver<Settle<E>>,
    settle: Sender<Settle<E>>,
    counts: Arc<Counts>,
}

/// A message's settle handle. Dropped unsettled (a worker gone), it counts
/// as `Abandoned`: the message is retried, never passed.
struct KafkaAck<E> {
    partition: Partition,
    offset: i64,
    delivered: u32,
    message: Option<Message<E>>,
    settle: Sender<Settle<E>>,
}

impl<E> KafkaAck<E> {
    fn send(&mut self, verdict: Verdict) {
        if let Some(message) = self.message.take() {
            // The source outlives every handle; if it is gone, the process
            // is exiting and nothing past the committed offset is lost.
            let _ = self.settle.send(Settle {
                partition: self.partition.clone(),
                offset: self.offset,
                verdict,
                message,
                delivered: self.delivered,
            });
        }
    }
}

impl<E: Send> Acknowledge for KafkaAck<E> {
    fn settle(mut self: Box<Self>, verdict: Verdict) {
        self.send(verdict);
    }
}

impl<E> Drop for KafkaAck<E> {
    fn drop(&mut self) {
        self.send(Verdict::Abandoned);
    }
}

impl<E: Send + 'static> ClientContext for Rebalancing<E> {}

impl<E: Send + 'static> ConsumerContext for Rebalancing<E> {
    /// The broker's answer to every commit, sent with or without waiting.
    fn commit_callback(
        &self,
        result: rdkafka::error::KafkaResult<()>,
        _offsets: &TopicPartitionList,
    ) {
        if let Err(error) = result {
            self.counts.failed_commits.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%error, "the broker refused an offset commit; a later one covers it");
        }
    }

    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Revoke(list) => {
                let revoked = partitions_of(list);
                self.counts
                    .revoked
                    .fetch_add(revoked.len() as u64, Ordering::Relaxed);
                self.release(consumer, &revoked);
            }
            Rebalance::Assign(_) => {}
            Rebalance::Error(error) => tracing::warn!(%error, "rebalance failed"),
        }
    }
}

impl<E: Send + 'static> Rebalancing<E> {
    fn new(counts: Arc<Counts>) -> Self {
        let (settle, settles) = crossbeam_channel::unbounded();
        Self {
            ledger: Mutex::default(),
            settles,
            settle,
            counts,
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger<E>> {
        self.ledger
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes in every settle reported so far.
    fn apply_settles(&self, ledger: &mut Ledger<E>) {
        for settle in self.settles.try_iter() {
            self.apply(ledger, settle);
        }
    }

    fn apply(&self, ledger: &mut Ledger<E>, settle: Settle<E>) {
        match settle.verdict {
            Verdict::Done | Verdict::Parked => {
                let count = if settle.verdict == Verdict::Done {
                    &self.counts.done
                } else {
                    &self.counts.parked
                };
                count.fetch_add(1, Ordering::Relaxed);
                ledger.offsets.settle(&settle.partition, settle.offset);
            }
            Verdict::Retry | Verdict::Abandoned => {
                if ledger.offsets.owns(&settle.partition) {
                    let at = Instant::now() + retry_delay(settle.delivered);
                    ledger.retries.push(Reverse(Due { at, settle }));
                }
            }
        }
    }

    /// Commits every partition whose settled prefix grew, after the
    /// database (the settles say so). `Async` sends the commit without
    /// waiting for the broker (the loop's commits: a lost one is made good
    /// by the next, or costs duplicates after a crash, never a message);
    /// `Sync` waits (before a partition is released or the consumer leaves).
    fn commit_due(&self, consumer: &BaseConsumer<Self>, ledger: &mut Ledger<E>, mode: CommitMode) {
        let due = ledger.offsets.due();
        if due.is_empty() {
            return;
        }
        let mut list = TopicPartitionList::new();
        for (partition, offset) in &due {
            let added = list.add_partition_offset(
                &partition.topic,
                partition.partition,
                Offset::Offset(*offset),
            );
            if let Err(error) = added {
                tracing::warn!(%error, "could not list an offset to commit");
            }
        }
        match consumer.commit(&list, mode) {
            Ok(()) => {
                self.counts.commits.fetch_add(1, Ordering::Relaxed);
                for (partition, offset) in &due {
                    ledger.offsets.committed(partition, *offset);
                }
            }
            // Refused before it was sent: the offsets stay due.
            Err(error) => tracing::warn!(%error, "offset commit refused; trying again"),
        }
    }

    /// A rebalance revokes `revoked`: waits (a while) for their messages in
    /// the workers' hands to settle, commits, and forgets them.
    fn release(&self, consumer: &BaseConsumer<Self>, revoked: &[Partition]) {
        let deadline = Instant::now() + REVOKE_PATIENCE;
        loop {
            let mut ledger = self.ledger();
            self.apply_settles(&mut ledger);
            let in_hand: usize = revoked
                .iter()
                .map(|partition| {
                    let waiting = ledger
                        .retries
                        .iter()
                        .filter(|due| &due.0.settle.partition == partition)
                        .count();
                    ledger
                        .offsets
                        .unsettled_in(partition)
                        .saturating_sub(waiting)
                })
                .sum();
            if in_hand == 0 || Instant::now() >= deadline {
                if in_hand > 0 {
                    tracing::warn!(
                        in_hand,
                        "released partitions with messages still in the workers' hands; they come again"
                    );
                }
                self.commit_due(consumer, &mut ledger, CommitMode::Sync);
                for partition in revoked {
                    ledger.offsets.forget(partition);
                }
                ledger
                    .retries
                    .retain(|due| !revoked.contains(&due.0.settle.partition));
                return;
            }
            drop(ledger);
            // Settles arrive from the workers; wait for the next one.
            if let Ok(settle) = self.settles.recv_timeout(POLL_WAIT) {
                self.apply(&mut self.ledger(), settle);
            }
        }
    }
}

fn partitions_of(list: &TopicPartitionList) -> Vec<Partition> {
    list.elements()
        .iter()
        .map(|element| Partition {
            topic: element.topic().to_owned(),
            partition: element.partition(),
        })
        .collect()
}

impl<E: Wire + Clone + Send + 'static> KafkaSource<E> {
    /// The counts so far, shared (the caller reads them at the end).
    pub fn counts(&self) -> Arc<Counts> {
        self.consumer.context().counts.clone()
    }

    fn consume(&self, chunks: &Sender<Vec<Incoming<E>>>, stop: &Stop) -> anyhow::Result<u64> {
        let context = self.consumer.context();
        let mut rejected = 0;
        let mut last_message = Instant::now();
        let mut last_commit = Instant::now();
        while !stop.is_raised() {
            let mut chunk = self.due_retries();
            self.poll_into(&mut chunk, &mut rejected);
            if !chunk.is_empty() {
                last_message = Instant::now();
                if chunks.send(chunk).is_err() {
                    anyhow::bail!("every worker stopped before the topics were consumed");
                }
            }
            let unsettled = {
                let mut ledger = context.ledger();
                context.apply_settles(&mut ledger);
                if last_commit.elapsed() >= COMMIT_EVERY {
                    context.commit_due(&self.consumer, &mut ledger, CommitMode::Async);
                    last_commit = Instant::now();
                }
                ledger.offsets.unsettled()
            };
            if unsettled == 0
                && self
                    .exit_when_idle
                    .is_some_and(|idle| last_message.elapsed() >= idle)
            {
                tracing::info!("no message for a while; stopping");
                break;
            }
        }
        Ok(rejected)
    }

    /// The retried messages whose wait is over, with new handles.
    fn due_retries(&self) -> Vec<Incoming<E>> {
        let context = self.consumer.context();
        let mut ledger = context.ledger();
        let now = Instant::now();
        let mut due = Vec::new();
        while ledger.retries.peek().is_some_and(|next| next.0.at <= now) {
            let Some(Reverse(Due { settle, .. })) = ledger.retries.pop() else {
                break;
            };
            context.counts.redelivered.fetch_add(1, Ordering::Relaxed);
            due.push(self.incoming(
                settle.partition,
                settle.offset,
                settle.message,
                settle.delivered + 1,
            ));
        }
        due
    }

    /// Polls records into `chunk`: waits for the first, then takes what
    /// has arrived, up to [`CHUNK`].
    fn poll_into(&self, chunk: &mut Vec<Incoming<E>>, rejected: &mut u64) {
        let mut wait = POLL_WAIT;
        while chunk.len() < CHUNK {
            // A poll that served a rebalance or an error returns nothing,
            // early: that ends this round, the next one polls again.
            match self.consumer.poll(wait) {
                Some(Ok(record)) => {
                    chunk.extend(self.take_in(&record, rejected));
                    wait = Duration::ZERO;
                }
                Some(Err(error)) => {
                    tracing::warn!(%error, "reading from Kafka failed");
                    break;
                }
                None => break,
            }
        }
    }

    /// Takes one record in for the workers; `None` if it was rejected
    /// (counted in `rejected`; its offset passes: it will never parse).
    fn take_in(&self, record: &BorrowedMessage<'_>, rejected: &mut u64) -> Option<Incoming<E>> {
        let context = self.consumer.context();
        let partition = Partition {
            topic: record.topic().to_owned(),
            partition: record.partition(),
        };
        let offset = record.offset();
        context.ledger().offsets.take(&partition, offset);
        match read_record(record) {
            Ok(message) => Some(self.incoming(partition, offset, message, 1)),
            Err(reason) => {
                note(format_args!(
                    "{}/{} offset {offset}: rejected: {reason}",
                    partition.topic, partition.partition
                ));
                context.ledger().offsets.settle(&partition, offset);
                *rejected += 1;
                None
            }
        }
    }

    fn incoming(
        &self,
        partition: Partition,
        offset: i64,
        message: Message<E>,
        delivered: u32,
    ) -> Incoming<E> {
        let ack = Box::new(KafkaAck {
            partition,
            offset,
            delivered,
            message: Some(message.clone()),
            settle: self.consumer.context().settle.clone(),
        });
        Incoming {
            message,
            delivered,
            ack,
        }
    }
}

/// A record as a message: its value is an envelope; a `message-id` header,
/// if any, is its id, and a `traceparent` header its trace context.
fn read_record<E: Wire>(record: &BorrowedMessage<'_>) -> Result<Message<E>, String> {
    let mut message =
        parse_line(record.payload().unwrap_or_default()).map_err(|e| e.to_string())?;
    if let Some(headers) = record.headers() {
        for header in headers.iter() {
            let Some(value) = header.value else { continue };
            let text = || {
                std::str::from_utf8(value)
                    .map_err(|_| format!("the {} header is not UTF-8", header.key))
            };
            if header.key == MESSAGE_ID_HEADER {
                message.id = MessageId::new(text()?).map_err(|e| e.to_string())?;
            } else if header.key == TRACEPARENT {
                message.trace_parent = Some(text()?.to_owned());
            }
        }
    }
    Ok(message)
}

impl<E: Send + 'static> Committer<E> {
    /// Call it after the pipeline returned: takes in the last settles,
    /// commits them, and leaves the group (its partitions move at once,
    /// instead of after the session timeout).
    pub fn finish(self) {
        let context = self.consumer.context();
        {
            let mut ledger = context.ledger();
            context.apply_settles(&mut ledger);
            context.commit_due(&self.consumer, &mut ledger, CommitMode::Sync);
        }
        self.consumer.unsubscribe();
    }
}

impl<E: Wire + Clone + Send + 'static> Source<E> for KafkaSource<E> {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming<E>>>, stop: &Stop) -> anyhow::Result<u64> {
        self.consume(chunks, stop)
    }
}
