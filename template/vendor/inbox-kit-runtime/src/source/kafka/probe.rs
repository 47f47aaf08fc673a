//! Asking the broker about the group, for the metrics and the readiness
//! check: per partition of the topics, the end offset minus the group's
//! committed offset, from a client of its own that does not join the group.

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use crate::source::BrokerProbe;

/// The longest each of a probe's requests waits for the broker.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The group's view of the broker.
pub struct KafkaProbe {
    pub(super) consumer: BaseConsumer,
    pub(super) topics: Vec<String>,
}

impl KafkaProbe {
    /// Records not yet committed by the group, over the topics.
    pub fn uncommitted(&self) -> Result<u64, String> {
        let mut partitions = TopicPartitionList::new();
        for topic in &self.topics {
            let metadata = self
                .consumer
                .fetch_metadata(Some(topic), PROBE_TIMEOUT)
                .map_err(|error| format!("Kafka did not answer: {error}"))?;
            for found in metadata.topics() {
                for partition in found.partitions() {
                    partitions.add_partition(found.name(), partition.id());
                }
            }
        }
        let committed = self
            .consumer
            .committed_offsets(partitions, PROBE_TIMEOUT)
            .map_err(|error| format!("could not read the group's offsets: {error}"))?;
        let mut total = 0u64;
        for element in committed.elements() {
            let (low, high) = self
                .consumer
                .fetch_watermarks(element.topic(), element.partition(), PROBE_TIMEOUT)
                .map_err(|error| format!("could not read the end offsets: {error}"))?;
            let from = match element.offset() {
                Offset::Offset(offset) => offset,
                _ => low,
            };
            total += u64::try_from(high - from).unwrap_or(0);
        }
        Ok(total)
    }
}

impl BrokerProbe for KafkaProbe {
    fn pending(&self) -> Result<u64, String> {
        self.uncommitted()
    }
}
