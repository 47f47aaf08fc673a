//! Sending notifications to Kafka: one topic, the idempotency key
//! ([`Notice::idempotency_key`]) as the record key (a notification's resends land in
//! one partition, in order) and as an `idempotency-key` header for
//! receivers with an inbox of their own, and the trace context as
//! `traceparent` (see `crate::trace`). The producer is idempotent, so its
//! own retries are not stored twice; a send counts once the broker
//! acknowledged it (every in-sync replica).

use std::time::Duration;

use anyhow::Context;
use rdkafka::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use super::lines::to_line;
use super::{Notice, Outgoing, Sent, Sink};
use crate::message::TRACEPARENT;

/// How long a send may wait in the producer's queue, retries included.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Where notifications are produced (options of `relay send`).
#[derive(clap::Args, Debug, Clone)]
pub struct KafkaSinkOptions {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long, env = "KAFKA_BROKERS", default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// Topic the notifications go to.
    #[arg(long, default_value = "notifications")]
    pub notifications_topic: String,
}

/// Produces notifications to Kafka, waiting for each acknowledgement.
pub struct KafkaSink {
    producer: FutureProducer,
    topic: String,
    runtime: tokio::runtime::Handle,
}

impl KafkaSink {
    /// Creates the producer. Call it from inside a tokio runtime; sends
    /// block on that runtime.
    pub fn connect(options: &KafkaSinkOptions) -> anyhow::Result<Self> {
        let producer = ClientConfig::new()
            .set("bootstrap.servers", &options.brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // Each send is waited for before the next: lingering for a
            // batch would only add its wait to every send.
            .set("linger.ms", "0")
            .create()
            .context("could not create the Kafka producer")?;
        Ok(Self {
            producer,
            topic: options.notifications_topic.clone(),
            runtime: tokio::runtime::Handle::current(),
        })
    }
}

impl<N: Notice> Sink<N> for KafkaSink {
    fn send(&mut self, outgoing: &Outgoing<N>) -> Sent {
        let mut headers = OwnedHeaders::new().insert(Header {
            key: "idempotency-key",
            value: Some(outgoing.key.as_str()),
        });
        if let Some(traceparent) = outgoing.notification.trace_parent() {
            headers = headers.insert(Header {
                key: TRACEPARENT,
                value: Some(traceparent),
            });
        }
        let body = to_line(outgoing);
        let record = FutureRecord::to(&self.topic)
            .key(outgoing.key.as_str())
            .payload(body.as_str())
            .headers(headers);
        match self
            .runtime
            .block_on(self.producer.send(record, SEND_TIMEOUT))
        {
            Ok(_) => Sent::Confirmed,
            Err((error, _)) => Sent::Failed(format!("not acknowledged by Kafka: {error}")),
        }
    }
}
