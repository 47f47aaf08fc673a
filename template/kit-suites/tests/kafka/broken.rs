//! Known-broken Kafka sources: each makes one mistake real consumers make,
//! and is otherwise correct (it retries failed messages and commits after
//! its settles), so that the test that catches it catches that mistake.
//! One consumer of a group only: no rebalance handling.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{ClientConfig, Message as _, Offset, TopicPartitionList};

use {{crate_name}}::envelope::parse_line;
use {{crate_name}}::event::Event;
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::source::kafka::{KafkaOptions, Offsets, Partition};
use {{crate_name}}::source::{Acknowledge, Incoming, Source, Stop, Verdict, retry_delay};

/// The mistake a broken source makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mistake {
    /// Commits a record's offset as soon as it is taken, before its
    /// transaction: a crash or a restart then skips it.
    CommitBeforeDatabase,
    /// Commits the highest settled offset of a partition, not the end of
    /// its contiguous settled prefix: a failed message below it is skipped
    /// after a restart.
    CommitHighestSettled,
    /// Takes the message id from the record's place (topic, partition,
    /// offset): a republished event gets a new id, and applies again.
    IdFromOffset,
}

/// Every mistake, for the tests that check each is caught.
pub const MISTAKES: [Mistake; 3] = [
    Mistake::CommitBeforeDatabase,
    Mistake::CommitHighestSettled,
    Mistake::IdFromOffset,
];

struct Settled {
    partition: Partition,
    offset: i64,
    verdict: Verdict,
    message: Message,
    delivered: u32,
}

/// A broken source, and what it commits after the pipeline returned.
pub struct BrokenSource {
    mistake: Mistake,
    consumer: std::sync::Arc<BaseConsumer>,
    settle: Sender<Settled>,
    settles: Receiver<Settled>,
    state: std::sync::Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    offsets: Offsets,
    highest: HashMap<Partition, i64>,
    retries: Vec<(Instant, Settled)>,
}

struct Ack {
    settled: Option<Settled>,
    settle: Sender<Settled>,
}

impl Acknowledge for Ack {
    fn settle(mut self: Box<Self>, verdict: Verdict) {
        if let Some(mut settled) = self.settled.take() {
            settled.verdict = verdict;
            let _ = self.settle.send(settled);
        }
    }
}

impl BrokenSource {
    pub fn connect(options: &KafkaOptions, mistake: Mistake) -> Self {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &options.brokers)
            .set("group.id", &options.group)
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .create()
            .expect("a consumer");
        let topics: Vec<&str> = options.topics.iter().map(String::as_str).collect();
        consumer.subscribe(&topics).expect("subscribe");
        let (settle, settles) = crossbeam_channel::unbounded();
        Self {
            mistake,
            consumer: std::sync::Arc::new(consumer),
            settle,
            settles,
            state: std::sync::Arc::default(),
        }
    }

    /// What commits the settles that come after the pipeline returned.
    pub fn finisher(&self) -> impl FnOnce() + Send + 'static {
        let consumer = self.consumer.clone();
        let settles = self.settles.clone();
        let state = self.state.clone();
        let mistake = self.mistake;
        move || {
            let mut state = state.lock().expect("state");
            apply(&mut state, &settles);
            commit(&consumer, &mut state, mistake);
        }
    }

    fn take(&self, record: &rdkafka::message::BorrowedMessage<'_>) -> Option<Incoming> {
        let partition = Partition {
            topic: record.topic().to_owned(),
            partition: record.partition(),
        };
        let offset = record.offset();
        let mut message = parse_line(record.payload().unwrap_or_default()).ok()?;
        if self.mistake == Mistake::IdFromOffset {
            let place = format!("{}/{}/{offset}", partition.topic, partition.partition);
            message.id = MessageId::new(place).expect("an id");
        }
        let mut state = self.state.lock().expect("state");
        state.offsets.take(&partition, offset);
        if self.mistake == Mistake::CommitBeforeDatabase {
            let mut list = TopicPartitionList::new();
            list.add_partition_offset(
                &partition.topic,
                partition.partition,
                Offset::Offset(offset + 1),
            )
            .expect("an offset");
            let _ = self.consumer.commit(&list, CommitMode::Sync);
        }
        drop(state);
        Some(self.incoming(partition, offset, message, 1))
    }

    fn incoming(
        &self,
        partition: Partition,
        offset: i64,
        message: Message,
        delivered: u32,
    ) -> Incoming {
        Incoming {
            message: message.clone(),
            delivered,
            ack: Box::new(Ack {
                settled: Some(Settled {
                    partition,
                    offset,
                    verdict: Verdict::Abandoned,
                    message,
                    delivered,
                }),
                settle: self.settle.clone(),
            }),
        }
    }
}

fn apply(state: &mut State, settles: &Receiver<Settled>) {
    for settled in settles.try_iter() {
        match settled.verdict {
            Verdict::Done | Verdict::Parked => {
                state.offsets.settle(&settled.partition, settled.offset);
                let highest = state.highest.entry(settled.partition.clone()).or_insert(-1);
                *highest = (*highest).max(settled.offset);
            }
            Verdict::Retry | Verdict::Abandoned => {
                let at = Instant::now() + retry_delay(settled.delivered);
                state.retries.push((at, settled));
            }
        }
    }
}

fn commit(consumer: &BaseConsumer, state: &mut State, mistake: Mistake) {
    let due: Vec<(Partition, i64)> = match mistake {
        Mistake::CommitHighestSettled => state
            .highest
            .iter()
            .map(|(partition, highest)| (partition.clone(), highest + 1))
            .collect(),
        Mistake::CommitBeforeDatabase => return,
        Mistake::IdFromOffset => state.offsets.due(),
    };
    if due.is_empty() {
        return;
    }
    let mut list = TopicPartitionList::new();
    for (partition, offset) in &due {
        list.add_partition_offset(
            &partition.topic,
            partition.partition,
            Offset::Offset(*offset),
        )
        .expect("an offset");
    }
    if consumer.commit(&list, CommitMode::Sync).is_ok() {
        for (partition, offset) in &due {
            state.offsets.committed(partition, *offset);
        }
    }
}

impl Source<Event> for BrokenSource {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming>>, stop: &Stop) -> anyhow::Result<u64> {
        while !stop.is_raised() {
            let mut chunk = Vec::new();
            {
                let mut state = self.state.lock().expect("state");
                let now = Instant::now();
                let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut state.retries)
                    .into_iter()
                    .partition(|(at, _)| *at <= now);
                state.retries = waiting;
                drop(state);
                for (_, settled) in due {
                    chunk.push(self.incoming(
                        settled.partition,
                        settled.offset,
                        settled.message,
                        settled.delivered + 1,
                    ));
                }
            }
            let mut wait = Duration::from_millis(50);
            while let Some(Ok(record)) = self.consumer.poll(wait) {
                chunk.extend(self.take(&record));
                wait = Duration::ZERO;
            }
            if !chunk.is_empty() && chunks.send(chunk).is_err() {
                break;
            }
            let mut state = self.state.lock().expect("state");
            apply(&mut state, &self.settles);
            commit(&self.consumer, &mut state, self.mistake);
        }
        Ok(0)
    }
}
