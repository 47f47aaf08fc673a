//! A known-broken JetStream source: it settles each message after its
//! commit, as it should, but with a plain acknowledgement that nothing
//! confirms (`ack()` instead of `double_ack()`). It passes every end-to-end
//! test most of the time: the acknowledgement usually arrives. When the
//! connection drops or the server is busy it does not, and the consumer
//! has already told everyone the message was done. Caught, on every run,
//! by the settle proxy (`proxy.rs`): none of its settles asks for a
//! confirmation, and it counts withheld ones as acknowledged.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer::PullConsumer, message::Acker};
use crossbeam_channel::Sender;
use futures::StreamExt;

use {{crate_name}}::envelope::parse_line;
use {{crate_name}}::event::Event;
use {{crate_name}}::source::nats::{Counts, NatsOptions, consumer_config};
use {{crate_name}}::source::{Acknowledge, Incoming, Source, Stop, Verdict};

/// The broken source, on the stream and durable consumer `options` name.
pub struct FireAndForget {
    consumer: PullConsumer,
    counts: Arc<Counts>,
}

impl FireAndForget {
    pub async fn connect(options: &NatsOptions) -> Self {
        let client = async_nats::connect(&options.nats_url)
            .await
            .expect("connect");
        let stream = jetstream::new(client)
            .get_stream(&options.stream)
            .await
            .expect("the stream");
        let consumer = stream
            .create_consumer(consumer_config(&options.durable, options.ack_wait))
            .await
            .expect("the consumer");
        Self {
            consumer,
            counts: Arc::default(),
        }
    }

    pub fn counts(&self) -> Arc<Counts> {
        self.counts.clone()
    }
}

impl Source<Event> for FireAndForget {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming>>, stop: &Stop) -> anyhow::Result<u64> {
        let runtime = tokio::runtime::Handle::current();
        runtime.block_on(async {
            while !stop.is_raised() {
                let mut batch = self
                    .consumer
                    .batch()
                    .max_messages(64)
                    .expires(Duration::from_millis(500))
                    .messages()
                    .await?;
                while let Some(Ok(message)) = batch.next().await {
                    let delivered = message.info().map_or(1, |info| info.delivered);
                    if delivered > 1 {
                        self.counts.redelivered.fetch_add(1, Ordering::Relaxed);
                    }
                    let (message, acker) = message.split();
                    let ack = Box::new(PlainAck {
                        acker,
                        counts: self.counts.clone(),
                        runtime: runtime.clone(),
                    });
                    let parsed = parse_line(&message.payload).expect("a valid envelope");
                    let incoming = Incoming {
                        message: parsed,
                        delivered: u32::try_from(delivered).unwrap_or(u32::MAX),
                        ack,
                    };
                    if chunks.send(vec![incoming]).is_err() {
                        return Ok(0);
                    }
                }
            }
            Ok(0)
        })
    }
}

/// The broken settle: sent, counted as done, never confirmed.
struct PlainAck {
    acker: Acker,
    counts: Arc<Counts>,
    runtime: tokio::runtime::Handle,
}

impl Acknowledge for PlainAck {
    fn settle(self: Box<Self>, verdict: Verdict) {
        let (kind, count) = match verdict {
            Verdict::Done => (AckKind::Ack, &self.counts.acknowledged),
            Verdict::Retry => (AckKind::Nak(None), &self.counts.retried),
            Verdict::Parked => (AckKind::Term, &self.counts.terminated),
            Verdict::Abandoned => return,
        };
        // Settled on a worker's thread, outside the runtime: block on it.
        if self.runtime.block_on(self.acker.ack_with(kind)).is_ok() {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }
}
