//! Connecting to JetStream: the stream, and a durable pull consumer whose
//! redelivery settings agree with the inbox's attempts.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use async_nats::jetstream::{self, consumer::pull, stream};

use super::{Counts, NatsSource, Settled, settle};

/// Where the messages come from (options of `consume`).
#[derive(clap::Args, Debug)]
pub struct NatsOptions {
    /// NATS server URL.
    #[arg(long, env = "NATS_URL", default_value = "nats://127.0.0.1:4222")]
    pub nats_url: String,
    /// JetStream stream to consume (created over --subject if missing).
    #[arg(long, env = "NATS_STREAM", default_value = "EVENTS")]
    pub stream: String,
    /// Subjects the stream stores, if it has to be created (repeatable).
    #[arg(long = "subject", default_value = "events.>")]
    pub subjects: Vec<String>,
    /// Durable consumer name: every process with the same name shares the
    /// stream's messages (scale out by starting more).
    #[arg(long, env = "NATS_DURABLE", default_value = "{{project-name}}")]
    pub durable: String,
    /// How long the broker waits for an acknowledgement before it delivers
    /// the message again (slow handlers are kept alive with `Progress`).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub ack_wait: Duration,
    /// Stop once no message arrived for this long (for scripts and tests);
    /// default: run until interrupted.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub exit_when_idle: Option<Duration>,
}

impl NatsOptions {
    /// Connects, creates the stream and the consumer if they are missing
    /// (or updates the consumer's settings), and starts the acknowledging
    /// task. `max_attempts` is the inbox's.
    pub async fn connect(&self, max_attempts: u32) -> anyhow::Result<(NatsSource, Settled)> {
        let client = async_nats::connect(&self.nats_url).await.with_context(|| {
            format!(
                "could not reach NATS at {} (start one with JetStream: docker run -d -p 4222:4222 nats -js)",
                self.nats_url
            )
        })?;
        let context = jetstream::new(client.clone());
        let stream = context
            .get_or_create_stream(stream::Config {
                name: self.stream.clone(),
                subjects: self.subjects.clone(),
                ..Default::default()
            })
            .await
            .with_context(|| format!("could not open the stream {}", self.stream))?;
        let consumer = stream
            .create_consumer(consumer_config(&self.durable, self.ack_wait, max_attempts))
            .await
            .with_context(|| format!("could not create the consumer {}", self.durable))?;
        let counts = Arc::new(Counts::default());
        let (outbox, settled) = settle::start(client, self.ack_wait, counts.clone());
        let source = NatsSource {
            consumer,
            exit_when_idle: self.exit_when_idle,
            outbox,
            counts,
        };
        Ok((source, settled))
    }
}

/// The durable consumer's settings.
///
/// The inbox dead-letters a message at its `max_attempts`-th failure, and
/// parks one that the broker delivered more often than that without a
/// counted failure (the consumer died on it). So the broker must deliver
/// once more than `max_attempts`: `max_deliver` is one above it, and the
/// consumer's own limit never drops a message silently before the inbox
/// has parked it. The `backoff` list (ack timeouts only) must be shorter
/// than `max_deliver`, or JetStream refuses the consumer.
pub fn consumer_config(durable: &str, ack_wait: Duration, max_attempts: u32) -> pull::Config {
    let max_deliver = i64::from(max_attempts) + 1;
    let steps = usize::try_from(max_deliver - 1).unwrap_or(1).clamp(1, 3);
    pull::Config {
        durable_name: Some(durable.to_owned()),
        ack_policy: jetstream::consumer::AckPolicy::Explicit,
        ack_wait,
        max_deliver,
        backoff: (0..steps).map(|step| ack_wait * (1 << step)).collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_broker_delivers_once_more_than_the_inbox_attempts_and_backoff_fits() {
        for max_attempts in 1..=20 {
            let config = consumer_config("c", Duration::from_secs(30), max_attempts);
            assert_eq!(config.max_deliver, i64::from(max_attempts) + 1);
            assert!(!config.backoff.is_empty());
            assert!(
                (config.backoff.len() as i64) < config.max_deliver,
                "{max_attempts}"
            );
            assert_eq!(
                config.backoff[0],
                Duration::from_secs(30),
                "backoff starts at the ack wait"
            );
        }
    }
}
