//! NATS JetStream as a source: a real at-least-once broker, with explicit
//! acknowledgements.
//!
//! Each stream message's body is one JSON envelope, exactly like a line of
//! a file of lines (see [`crate::envelope`]): the message id is the
//! envelope's `id`, fixed by the publisher. It is never the stream
//! sequence or anything of the delivery: a publisher's retry and a
//! redelivery must carry the same id. (`Nats-Msg-Id`, JetStream's
//! publish-side dedup header, is the publisher's business: it protects the
//! stream from a publisher's retries within a window, not this consumer
//! from redeliveries.)
//!
//! A `traceparent` header (W3C trace context) is kept with the message:
//! its spans here, and the notifications it causes, continue the
//! producer's trace (see [`crate::trace`]).
//!
//! Settling, after the transaction returned (see [`crate::source`]):
//!
//! * `Done`: a confirmed acknowledgement (`double_ack`). A plain ack is
//!   fire and forget: lost on a broken connection, the message comes back.
//!   It would be a duplicate, but confirmed acks make that rare.
//! * `Retry`: `Nak` with a delay that grows with the delivery count. (The
//!   consumer's `backoff` list applies to ack timeouts only, not to naks.)
//! * `Parked`: `Term`. JetStream's own `max_deliver` would only publish an
//!   advisory and drop the message; the inbox has written it to the dead
//!   letters first, with its payload and last error.
//! * `Abandoned` (the database failed): nothing. The ack wait expires and
//!   the broker redelivers.
//!
//! While a batch is in flight, a ticker sends `Progress` for its messages
//! so that slow handlers do not let the ack wait expire and the message go
//! to another consumer meanwhile.

mod probe;
mod settle;
mod setup;

pub use probe::NatsProbe;
pub use settle::Settled;
pub use setup::{NatsOptions, consumer_config};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::consumer::pull::Batch;
use async_nats::jetstream::message::Acker;
use crossbeam_channel::Sender;
use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;

use super::{Acknowledge, Incoming, Source, Stop, Verdict};
use crate::envelope::{Wire, parse_line};
use crate::message::TRACEPARENT;
use crate::progress::note;

/// Messages a pull asks for at once. The ack wait starts when the server
/// sends a message, time spent in this client's buffer included, so pulls
/// stay small.
const PULL_BATCH: usize = 64;

/// How long a pull waits for messages when the stream has none: the most a
/// stop waits for the pull under way.
const PULL_WAIT: Duration = Duration::from_secs(1);

/// A JetStream pull consumer, ready to be consumed.
pub struct NatsSource {
    client: async_nats::Client,
    consumer: PullConsumer,
    exit_when_idle: Option<Duration>,
    outbox: Outbox,
    counts: Arc<Counts>,
}

/// Messages counted while consuming.
#[derive(Debug, Default)]
pub struct Counts {
    /// Messages whose delivery count was above 1: redeliveries seen.
    pub redelivered: AtomicU64,
    pub acknowledged: AtomicU64,
    pub retried: AtomicU64,
    pub terminated: AtomicU64,
    /// Acknowledgements the server did not confirm (the message will come
    /// back, as a duplicate).
    pub unconfirmed: AtomicU64,
}

/// Where settled messages go: to the task that acknowledges them.
#[derive(Clone)]
struct Outbox {
    settle: mpsc::UnboundedSender<(Acker, Verdict, u32)>,
    in_flight: Arc<Mutex<HashMap<u64, InFlight>>>,
}

/// A message taken and not yet settled, for the progress ticker.
struct InFlight {
    reply: async_nats::Subject,
    since: Instant,
}

/// A message's acknowledgement handle.
struct JetStreamAck {
    /// Taken when the message is settled.
    acker: Option<Acker>,
    sequence: u64,
    delivered: u32,
    outbox: Outbox,
}

impl Acknowledge for JetStreamAck {
    fn settle(mut self: Box<Self>, verdict: Verdict) {
        if let Some(acker) = self.acker.take() {
            // The receiving task outlives every handle: if it is gone, the
            // process is exiting and the broker redelivers.
            let _ = self.outbox.settle.send((acker, verdict, self.delivered));
        }
    }
}

impl Drop for JetStreamAck {
    /// Settled or not (a handle dropped unsettled is a lost
    /// acknowledgement: the broker redelivers after the ack wait), the
    /// message is no longer kept alive.
    fn drop(&mut self) {
        if let Ok(mut in_flight) = self.outbox.in_flight.lock() {
            in_flight.remove(&self.sequence);
        }
    }
}

impl NatsSource {
    /// The counts so far, shared (the caller reads them at the end).
    pub fn counts(&self) -> Arc<Counts> {
        self.counts.clone()
    }

    /// What the metrics and readiness checks ask the server, for this
    /// consumer. Call it from inside the runtime the source runs on.
    pub fn probe(&self) -> NatsProbe {
        NatsProbe {
            client: self.client.clone(),
            consumer: self.consumer.clone(),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    async fn consume<E: Wire>(
        self,
        chunks: &Sender<Vec<Incoming<E>>>,
        stop: &Stop,
    ) -> anyhow::Result<u64> {
        let mut rejected = 0;
        let mut last_message = Instant::now();
        while !stop.is_raised() {
            let pulled = self
                .consumer
                .batch()
                .max_messages(PULL_BATCH)
                .expires(PULL_WAIT)
                .messages()
                .await;
            match pulled {
                Ok(batch) => {
                    if self.hand_over(batch, chunks, &mut rejected).await? {
                        last_message = Instant::now();
                    }
                }
                // A server away (restarting, unreachable) is waited for:
                // the client reconnects on its own, and readiness says so
                // meanwhile.
                Err(error) => {
                    tracing::warn!(%error, "could not pull from JetStream; trying again");
                    tokio::time::sleep(PULL_WAIT).await;
                }
            }
            if self
                .exit_when_idle
                .is_some_and(|idle| last_message.elapsed() >= idle)
            {
                tracing::info!("no message for a while; stopping");
                break;
            }
        }
        Ok(rejected)
    }

    /// Hands one pull's messages to the workers; whether there were any.
    ///
    /// The pull is read to its end even if a stop comes meanwhile: the
    /// server has sent those messages already, and each must reach a worker
    /// and be settled. So a stop leaves nothing delivered and
    /// unacknowledged in a client buffer. Messages already received go to
    /// the workers together, as one chunk; the source waits for the next
    /// one only with none in hand, so a message never waits for a later
    /// one.
    async fn hand_over<E: Wire>(
        &self,
        mut batch: Batch,
        chunks: &Sender<Vec<Incoming<E>>>,
        rejected: &mut u64,
    ) -> anyhow::Result<bool> {
        let mut received = false;
        let mut chunk = Vec::new();
        loop {
            let next = match batch.next().now_or_never() {
                Some(next) => next,
                None => {
                    send(chunks, &mut chunk)?;
                    batch.next().await
                }
            };
            match next {
                Some(Ok(message)) => {
                    received = true;
                    chunk.extend(self.take_in(message, rejected));
                }
                Some(Err(error)) => tracing::warn!(%error, "pulling from JetStream failed"),
                None => break,
            }
        }
        send(chunks, &mut chunk)?;
        Ok(received)
    }

    /// Takes one message in for the workers; `None` if it has no JetStream
    /// metadata, or if it was rejected (counted in `rejected`: its body will
    /// never parse, so its redelivery is stopped).
    fn take_in<E: Wire>(
        &self,
        message: async_nats::jetstream::Message,
        rejected: &mut u64,
    ) -> Option<Incoming<E>> {
        let (sequence, delivered) = match message.info() {
            Ok(info) => (
                info.stream_sequence,
                u32::try_from(info.delivered).unwrap_or(u32::MAX),
            ),
            Err(error) => {
                tracing::warn!(%error, "a message without JetStream metadata; skipped");
                return None;
            }
        };
        if delivered > 1 {
            self.counts.redelivered.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(reply) = message.reply.clone() {
            let in_flight = InFlight {
                reply,
                since: Instant::now(),
            };
            if let Ok(mut map) = self.outbox.in_flight.lock() {
                map.insert(sequence, in_flight);
            }
        }
        let (message, acker) = message.split();
        let ack = Box::new(JetStreamAck {
            acker: Some(acker),
            sequence,
            delivered,
            outbox: self.outbox.clone(),
        });
        match parse_line(&message.payload) {
            Ok(mut parsed) => {
                parsed.trace_parent = message
                    .headers
                    .as_ref()
                    .and_then(|headers| headers.get(TRACEPARENT))
                    .map(|value| value.as_str().to_owned());
                Some(Incoming {
                    message: parsed,
                    delivered,
                    ack,
                })
            }
            Err(reason) => {
                note(format_args!(
                    "stream sequence {sequence}: rejected: {reason}"
                ));
                ack.settle(Verdict::Parked);
                *rejected += 1;
                None
            }
        }
    }
}

/// Hands `chunk` (if any) to the workers, leaving it empty.
fn send<E>(chunks: &Sender<Vec<Incoming<E>>>, chunk: &mut Vec<Incoming<E>>) -> anyhow::Result<()> {
    if !chunk.is_empty() && chunks.send(std::mem::take(chunk)).is_err() {
        anyhow::bail!("every worker stopped before the stream was consumed");
    }
    Ok(())
}

impl<E: Wire + Send + 'static> Source<E> for NatsSource {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming<E>>>, stop: &Stop) -> anyhow::Result<u64> {
        // The pipeline runs sources on a blocking thread of its runtime.
        tokio::runtime::Handle::current().block_on(self.consume(chunks, stop))
    }
}
