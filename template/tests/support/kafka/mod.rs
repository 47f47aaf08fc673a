//! The Kafka broker the Kafka tests run against: one of each test's own
//! (`server`, the test kit's), with the events topic, a producer that keys records like a
//! real publisher, and what a test asks the broker about a group.

pub use inbox_kit_testkit::kafka::server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::Message as _;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use {{crate_name}}::envelope::to_line;
use {{crate_name}}::message::Message;
use {{crate_name}}::relay::kafka::KafkaSinkOptions;
use {{crate_name}}::source::kafka::{KafkaOptions, KafkaProbe, MESSAGE_ID_HEADER};

use server::{OwnBroker, Storage};

/// The events topic every test consumes.
pub const TOPIC: &str = "events";

/// Its partitions: more than one, so that offsets are per partition.
pub const PARTITIONS: i32 = 3;

/// A broker of one test's own, with the events topic.
pub struct Broker {
    server: OwnBroker,
    runtime: tokio::runtime::Runtime,
    producer: FutureProducer,
    /// A probe per group asked about, kept: a client costs a connection.
    probes: Mutex<HashMap<String, Arc<KafkaProbe>>>,
}

impl Broker {
    /// A broker storing in SQLite: what the tests use.
    pub fn start() -> Self {
        Self::start_with(Storage::Sqlite)
    }

    pub fn start_with(storage: Storage) -> Self {
        let server = OwnBroker::start(storage);
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let mut producer = client(&server.bootstrap());
        producer.set("enable.idempotence", "true");
        if storage == Storage::Memory {
            producer.set("batch.num.messages", "1");
        }
        let producer: FutureProducer = producer.create().expect("a producer");
        let broker = Self {
            server,
            runtime,
            producer,
            probes: Mutex::default(),
        };
        broker.create_topic(TOPIC, PARTITIONS);
        broker
    }

    pub fn bootstrap(&self) -> String {
        self.server.bootstrap()
    }

    /// Stops the broker process (for outage tests); nothing answers at
    /// [`Self::bootstrap`] after this.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Runs `work` on this broker's runtime.
    pub fn block_on<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(work)
    }

    /// Starts `work` on this broker's runtime, in the background.
    pub fn spawn<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.runtime.spawn(work)
    }

    pub fn create_topic(&self, topic: &str, partitions: i32) {
        let admin: AdminClient<DefaultClientContext> =
            client(&self.bootstrap()).create().expect("an admin client");
        let created = self.block_on(admin.create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        ));
        for result in created.expect("create the topic") {
            result.unwrap_or_else(|(topic, code)| panic!("create {topic}: {code}"));
        }
    }

    /// `consume`'s options for `group` on the events topic.
    pub fn options(&self, group: &str) -> KafkaOptions {
        KafkaOptions {
            brokers: self.bootstrap(),
            topics: vec![TOPIC.to_owned()],
            group: group.to_owned(),
            partitions: PARTITIONS,
            session_timeout: Duration::from_secs(6),
            exit_when_idle: None,
        }
    }

    /// The same, as the consumer binary's command-line options.
    pub fn cli_args(&self, group: &str) -> Vec<String> {
        let options = self.options(group);
        vec![
            "--brokers".into(),
            options.brokers,
            "--topic".into(),
            TOPIC.into(),
            "--group".into(),
            options.group,
            "--session-timeout".into(),
            humantime::format_duration(options.session_timeout).to_string(),
        ]
    }

    /// Where `relay send` produces in these tests.
    pub fn relay_options(&self) -> KafkaSinkOptions {
        KafkaSinkOptions {
            brokers: self.bootstrap(),
            notifications_topic: "notifications".into(),
        }
    }

    /// Publishes `message` as a record of the events topic, keyed by its
    /// partition key (the account), with the message id in the
    /// `message-id` header.
    pub fn publish(&self, message: &Message) {
        self.publish_with(message, Some(message.id.as_str()));
    }

    /// Publishes `message`, with `id_header` as its `message-id` header (or
    /// none: the envelope's id is the message id then).
    pub fn publish_with(&self, message: &Message, id_header: Option<&str>) {
        let key = message.event.partition_key().to_string();
        self.publish_raw(&key, &to_line(message), id_header);
    }

    /// Publishes any value, valid or not.
    pub fn publish_raw(&self, key: &str, value: &str, id_header: Option<&str>) {
        self.publish_many([(key, value, id_header)]);
    }

    /// Publishes records `(key, value, message-id header)`, all in flight
    /// at once, and waits until the broker acknowledged every one.
    pub fn publish_many<'a>(
        &self,
        records: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
    ) {
        let deliveries: Vec<_> = records
            .into_iter()
            .map(|(key, value, id_header)| {
                let mut record = FutureRecord::to(TOPIC).key(key).payload(value);
                if let Some(id) = id_header {
                    record = record.headers(OwnedHeaders::new().insert(Header {
                        key: MESSAGE_ID_HEADER,
                        value: Some(id),
                    }));
                }
                self.producer
                    .send_result(record)
                    .unwrap_or_else(|(error, _)| panic!("publish: {error}"))
            })
            .collect();
        for delivery in deliveries {
            self.block_on(delivery)
                .expect("the producer is alive")
                .unwrap_or_else(|(error, _)| panic!("publish: {error}"));
        }
    }

    /// Records the group has not committed yet, over the events topic.
    pub fn uncommitted(&self, group: &str) -> u64 {
        let probe = {
            let mut probes = self.probes.lock().expect("probes");
            probes
                .entry(group.to_owned())
                .or_insert_with(|| Arc::new(self.options(group).probe().expect("a probe")))
                .clone()
        };
        probe.uncommitted().expect("the group's offsets")
    }

    /// The group's committed offset per partition of the events topic
    /// (`None`: nothing committed).
    pub fn committed(&self, group: &str) -> Vec<Option<i64>> {
        let consumer: BaseConsumer = client(&self.bootstrap())
            .set("group.id", group)
            .create()
            .expect("a client");
        let mut list = rdkafka::TopicPartitionList::new();
        for partition in 0..PARTITIONS {
            list.add_partition(TOPIC, partition);
        }
        let committed = consumer
            .committed_offsets(list, Duration::from_secs(10))
            .expect("the group's offsets");
        committed
            .elements()
            .iter()
            .map(|element| element.offset().to_raw().filter(|offset| *offset >= 0))
            .collect()
    }

    /// Waits until `group` has committed every record of the events topic,
    /// up to `patience`; `false` if it has not then.
    pub fn drained(&self, group: &str, patience: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < patience {
            if self.uncommitted(group) == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Every record of `topic`, read from the start to its end offsets by
    /// a client outside any group: `(key, idempotency-key header, value)`.
    pub fn records(&self, topic: &str) -> Vec<(String, String, String)> {
        let patience = Duration::from_secs(10);
        let reader: BaseConsumer = client(&self.bootstrap())
            .set("group.id", "test-reader")
            .set("enable.auto.commit", "false")
            .create()
            .expect("a reader");
        let metadata = reader
            .fetch_metadata(Some(topic), patience)
            .expect("the topic's metadata");
        let mut list = rdkafka::TopicPartitionList::new();
        let mut left = 0;
        for partition in metadata
            .topics()
            .iter()
            .flat_map(|found| found.partitions())
        {
            let (low, high) = reader
                .fetch_watermarks(topic, partition.id(), patience)
                .expect("end offsets");
            left += high - low;
            list.add_partition_offset(topic, partition.id(), rdkafka::Offset::Beginning)
                .expect("a partition");
        }
        reader.assign(&list).expect("assign");
        let text =
            |bytes: Option<&[u8]>| String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned();
        let mut records = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while left > 0 {
            assert!(
                Instant::now() < deadline,
                "the records of {topic} did not come"
            );
            let Some(record) = reader.poll(Duration::from_millis(200)) else {
                continue;
            };
            let record = record.expect("a record");
            let idempotency_key = record
                .headers()
                .and_then(|headers| {
                    headers
                        .iter()
                        .find(|header| header.key == "idempotency-key")
                        .map(|header| text(header.value))
                })
                .unwrap_or_default();
            records.push((text(record.key()), idempotency_key, text(record.payload())));
            left -= 1;
        }
        records
    }
}

/// A client's settings for the broker at `bootstrap`.
fn client(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", bootstrap);
    config
}
