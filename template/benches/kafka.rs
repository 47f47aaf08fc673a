//! `cargo bench --bench broker`: `consume` from Kafka against the broker's
//! own limit, measured in the same run on the same machine and printed as a
//! Markdown table.
//!
//! A broker of the benchmark's own (tansu, see
//! `tests/support/kafka/server.rs`, in memory: the SQLite storage the tests
//! use is bound by its own fetches) holds `BENCH_MESSAGES` (default 20000)
//! debit events over 3 partitions, keyed by account, 30% of them published
//! a second time as separate records. Each measurement is a new consumer
//! group, so each reads the same records from the start:
//!
//! * **consume and commit**: a group member that does nothing but poll
//!   and commit its position every 256 records, without waiting for the
//!   broker's answer (as the source commits): what the broker and the
//!   client can do here, with no database at all;
//! * **consume**: the real source, pipeline and inbox, one transaction per
//!   delivery and batched, on a fresh database.
//!
//! Each is timed from the member's start until the group has committed
//! every record; each figure is the median of three runs.
//!
//! Then the outbox relay producing `BENCH_RELAY_ROWS` (default 5000)
//! notifications, each acknowledged by the broker, against a plain loop
//! that produces the same rows the same way and marks nothing
//! (`tests/support/relay_rates.rs`). It needs `tansu` (and the database's
//! server).

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};

use inbox_kit_testkit::bench::{consume_rows, median, thousands};
use {{crate_name}}::handlers::{AnyHandler, Debit};
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::pipeline::{self, Options};
use {{crate_name}}::relay::kafka::KafkaSink;
use {{crate_name}}::source::Stop;
use {{crate_name}}::store::Store;
use support::harness::env_number;
use support::kafka::server::Storage;
use support::kafka::{Broker, PARTITIONS, TOPIC};
use support::relay_rates::relay_table;
use support::workload::{Payments, fixture_with_accounts};

const REPEATS: usize = 3;
/// Records between the baseline's commits.
const COMMIT_EVERY: usize = 256;

fn main() {
    let messages = env_number("BENCH_MESSAGES", 20_000) as usize;
    let broker = Broker::start_with(Storage::Memory);
    let distinct = publish(&broker, messages);
    println!(
        "Kafka benchmark: {messages} records ({distinct} distinct events) over {PARTITIONS} partitions, {} CPUs, tansu in memory at {}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        broker.bootstrap(),
    );
    println!("## `consume` throughput (debit consumer; median of {REPEATS} runs)\n");
    println!("| consumer | workers | records/s | vs consume and commit |");
    println!("|---|---|---|---|");
    let mut groups = 0..;
    let mut next_group = || format!("bench{}", groups.next().unwrap_or_default());
    let baseline = median(
        (0..REPEATS)
            .map(|_| messages as f64 / consume_and_commit(&broker, &next_group(), messages))
            .collect(),
    );
    println!(
        "| consume and commit every {COMMIT_EVERY} (no database) | - | {} | 1.00x |",
        thousands(baseline)
    );
    for workers in [1, 4] {
        consume_rows(workers, messages, REPEATS, baseline, |options| {
            consume(&broker, &next_group(), messages, options)
        });
    }
    let relay_options = broker.relay_options();
    broker.create_topic(&relay_options.notifications_topic, PARTITIONS);
    relay_table(
        "produced to Kafka, each acknowledged",
        env_number("BENCH_RELAY_ROWS", 5_000) as usize,
        REPEATS,
        || broker.block_on(async { KafkaSink::connect(&relay_options).expect("a producer") }),
    );
}

/// Publishes `count` records, a share of them second copies of an earlier
/// event, and returns how many distinct events there are.
fn publish(broker: &Broker, count: usize) -> usize {
    let mut payments = Payments::new(0x0b0e_5eed);
    let records: Vec<(String, String)> = payments
        .by_ref()
        .take(count)
        .map(|payment| (payment.account.to_string(), payment.envelope.to_string()))
        .collect();
    broker.publish_many(
        records
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str(), None)),
    );
    payments.distinct()
}

/// Seconds a bare group member takes to read every record and commit.
fn consume_and_commit(broker: &Broker, group: &str, records: usize) -> f64 {
    let started = Instant::now();
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", broker.bootstrap())
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("a consumer");
    consumer.subscribe(&[TOPIC]).expect("subscribe");
    let mut read = 0;
    while read < records {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(_)) => {
                read += 1;
                if read % COMMIT_EVERY == 0 {
                    consumer
                        .commit_consumer_state(CommitMode::Async)
                        .expect("commit");
                }
            }
            Some(Err(error)) => panic!("poll: {error}"),
            None => {}
        }
    }
    consumer
        .commit_consumer_state(CommitMode::Sync)
        .expect("commit");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(broker.uncommitted(group), 0, "the baseline left records");
    seconds
}

/// Seconds `consume`'s source, pipeline and inbox take to work through
/// every record on a fresh database.
fn consume(broker: &Broker, group: &str, records: usize, options: Options) -> f64 {
    let fixture = fixture_with_accounts();
    let database = fixture.database();
    let policy = Policy::default();
    let started = Instant::now();
    let (source, committer) = broker
        .block_on(broker.options(group).connect())
        .expect("join the group");
    let settled = source.counts();
    let stop = Arc::new(Stop::default());
    let run = broker.spawn(pipeline::run_until(
        Box::new(source),
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        move || database.inbox(policy),
        options,
        stop.clone(),
    ));
    // Watched through the source's own count of settled records first,
    // then the broker is asked: asking it all along would slow it down.
    let patience = Instant::now();
    while settled.done.load(Ordering::Relaxed) < records as u64 || broker.uncommitted(group) > 0 {
        assert!(
            patience.elapsed() < Duration::from_secs(600),
            "{group} did not commit the topic in 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let seconds = started.elapsed().as_secs_f64();
    stop.raise();
    broker.block_on(run).expect("task").expect("pipeline");
    committer.finish();
    seconds
}
