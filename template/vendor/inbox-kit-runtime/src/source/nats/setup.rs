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
    // No default here: a project gives its own name as the default
    // (`mut_arg("durable", ...)` on the command that flattens these).
    #[arg(long, env = "NATS_DURABLE")]
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
    /// task.
    pub async fn connect(&self) -> anyhow::Result<(NatsSource, Settled)> {
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
            .create_consumer(consumer_config(&self.durable, self.ack_wait))
            .await
            .with_context(|| format!("could not create the consumer {}", self.durable))?;
        let counts = Arc::new(Counts::default());
        let (outbox, settled) = settle::start(client.clone(), self.ack_wait, counts.clone());
        let source = NatsSource {
            client,
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
/// counted failure (the consumer died on it), then terminates it. So the
/// broker must never give up first: `max_deliver` is unlimited. A finite
/// one (it was `max_attempts + 1`) lost messages: the broker counts the
/// deliveries it sent, the inbox the counts it saw, and in about one release
/// run of the poison test in three the two disagreed (three deliveries
/// handled, none counted third); at its last delivery JetStream only
/// publishes an advisory, so the delivery that parks the message never came.
/// JetStream refuses a `backoff` list with an unlimited `max_deliver`, so
/// there is none: an unacknowledged message comes back after each ack wait
/// (a failed one is nak'ed with its own growing delay, see `settle.rs`).
pub fn consumer_config(durable: &str, ack_wait: Duration) -> pull::Config {
    pull::Config {
        durable_name: Some(durable.to_owned()),
        ack_policy: jetstream::consumer::AckPolicy::Explicit,
        ack_wait,
        max_deliver: -1,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_broker_never_gives_up_before_the_inbox() {
        let config = consumer_config("c", Duration::from_secs(30));
        assert_eq!(
            config.max_deliver, -1,
            "unlimited: the inbox parks, then terms"
        );
        assert!(
            config.backoff.is_empty(),
            "JetStream refuses backoff without a limit"
        );
        assert_eq!(config.ack_wait, Duration::from_secs(30));
        assert_eq!(config.ack_policy, jetstream::consumer::AckPolicy::Explicit);
    }
}
