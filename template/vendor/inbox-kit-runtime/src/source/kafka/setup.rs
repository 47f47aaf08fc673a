//! Joining the consumer group: the topics (created if missing), and a
//! consumer that never commits on its own.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::types::RDKafkaErrorCode;

use super::{Committer, Counts, KafkaProbe, KafkaSource, Rebalancing};

/// The record header that carries the message id, set by the producer.
pub const MESSAGE_ID_HEADER: &str = "message-id";

/// Where the records come from (options of `consume`).
#[derive(clap::Args, Debug, Clone)]
pub struct KafkaOptions {
    /// Kafka bootstrap servers, `host:port[,host:port...]`.
    #[arg(long, env = "KAFKA_BROKERS", default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// Topic to consume (repeatable).
    #[arg(long = "topic", env = "KAFKA_TOPIC", default_value = "events")]
    pub topics: Vec<String>,
    /// Consumer group: every process with the same group shares the
    /// topics' partitions (scale out by starting more, up to one per
    /// partition).
    // No default here: a project gives its own name as the default
    // (`mut_arg("group", ...)` on the command that flattens these).
    #[arg(long, env = "KAFKA_GROUP")]
    pub group: String,
    /// Partitions of a topic this creates because it is missing (with
    /// one replica: for development; create production topics yourself).
    #[arg(long, default_value_t = 3)]
    pub partitions: i32,
    /// How long the group waits for a member that stopped answering
    /// before its partitions move to the others.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub session_timeout: Duration,
    /// Stop once no record arrived for this long and everything taken is
    /// settled (for scripts and tests); default: run until interrupted.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub exit_when_idle: Option<Duration>,
}

impl KafkaOptions {
    /// The settings every client of these options shares.
    fn client(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.brokers)
            .set("group.id", &self.group);
        config
    }

    /// Creates missing topics, joins the group and subscribes.
    pub async fn connect<E: Send + 'static>(
        &self,
    ) -> anyhow::Result<(KafkaSource<E>, Committer<E>)> {
        self.create_topics().await?;
        let counts = Arc::new(Counts::default());
        let consumer: BaseConsumer<Rebalancing<E>> = self
            .client()
            // Offsets are committed by the source, after the database.
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set(
                "session.timeout.ms",
                self.session_timeout.as_millis().to_string(),
            )
            .set(
                "heartbeat.interval.ms",
                (self.session_timeout.as_millis() / 4).max(1).to_string(),
            )
            .create_with_context(Rebalancing::new(counts))
            .context("could not create the Kafka consumer")?;
        let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
        consumer
            .subscribe(&topics)
            .with_context(|| format!("could not subscribe to {}", self.topics.join(", ")))?;
        let consumer = Arc::new(consumer);
        let source = KafkaSource {
            consumer: consumer.clone(),
            exit_when_idle: self.exit_when_idle,
        };
        Ok((source, Committer { consumer }))
    }

    /// What the metrics and readiness checks ask the broker about this
    /// group.
    pub fn probe(&self) -> anyhow::Result<KafkaProbe> {
        let consumer = self
            .client()
            .create()
            .context("could not create the Kafka client for the probe")?;
        Ok(KafkaProbe {
            consumer,
            topics: self.topics.clone(),
        })
    }

    async fn create_topics(&self) -> anyhow::Result<()> {
        let admin: AdminClient<DefaultClientContext> = self
            .client()
            .create()
            .context("could not create the Kafka admin client")?;
        let topics: Vec<NewTopic<'_>> = self
            .topics
            .iter()
            .map(|topic| NewTopic::new(topic, self.partitions, TopicReplication::Fixed(1)))
            .collect();
        let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
        let created = admin
            .create_topics(&topics, &options)
            .await
            .with_context(|| {
                format!(
                    "could not reach Kafka at {} (start a broker, or set KAFKA_BROKERS)",
                    self.brokers
                )
            })?;
        for result in created {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((topic, code)) => anyhow::bail!("could not create the topic {topic}: {code}"),
            }
        }
        Ok(())
    }
}
