//! `cargo bench --bench broker`: `consume` against the broker's own limit,
//! measured in the same run on the same machine and printed as a Markdown
//! table.
//!
//! One stream holds `BENCH_MESSAGES` (default 20000) debit events, 30% of
//! them published a second time as separate broker messages (different
//! publish ids, as a publisher's late retry would be). Each measurement is a
//! new durable consumer of that stream, so each reads the same messages
//! from the start:
//!
//! * **pull and acknowledge**: a consumer that does nothing but pull (in
//!   the same bounded pulls as the source) and send confirmed
//!   acknowledgements, many at once: what the broker and the client can do
//!   here, with no database at all;
//! * **consume**: the real source, pipeline and inbox, one transaction per
//!   delivery and batched, on a fresh database.
//!
//! Each is timed from the consumer's start until the server counts nothing
//! pending and nothing unacknowledged; each figure is the median of three
//! runs.
//!
//! Then the outbox relay publishing `BENCH_RELAY_ROWS` (default 5000)
//! notifications to JetStream, each confirmed by the stream, against a
//! plain loop that publishes the same rows the same way and marks nothing
//! (`tests/support/relay_rates.rs`). It needs a NATS server with JetStream
//! (`NATS_URL`) and the database's.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, AckKind};
use futures::StreamExt;
use tokio::task::JoinSet;

use inbox_kit_testkit::bench::{consume_rows, median, thousands};
use {{crate_name}}::handlers::{AnyHandler, Debit};
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::pipeline::{self, Options};
use {{crate_name}}::relay::nats::NatsSink;
use {{crate_name}}::source::Stop;
use {{crate_name}}::source::nats::consumer_config;
use {{crate_name}}::store::Store;
use support::harness::env_number;
use support::nats::{Backlog, Broker, nats_url};
use support::relay_rates::relay_table;
use support::workload::{Payments, fixture_with_accounts};

const REPEATS: usize = 3;
const ACK_WAIT: Duration = Duration::from_secs(30);
/// The source's pull size (see `inbox_kit_runtime::source::nats`).
const PULL_BATCH: usize = 64;

fn main() {
    let messages = env_number("BENCH_MESSAGES", 20_000) as usize;
    let broker = Broker::new();
    let distinct = publish(&broker, messages);
    println!(
        "broker benchmark: {messages} stream messages ({distinct} distinct events), {} CPUs, NATS at {}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        nats_url(),
    );
    println!("## `consume` throughput (debit consumer; median of {REPEATS} runs)\n");
    println!("| consumer | workers | messages/s | vs pull and acknowledge |");
    println!("|---|---|---|---|");
    let mut durables = 0..;
    let mut next_durable = || format!("bench{}", durables.next().unwrap_or_default());
    for workers in [1, 4] {
        let baseline = median(
            (0..REPEATS)
                .map(|_| messages as f64 / pull_and_acknowledge(&broker, &next_durable(), workers))
                .collect(),
        );
        println!(
            "| pull and acknowledge (no database) | {workers} | {} | 1.00x |",
            thousands(baseline)
        );
        consume_rows(workers, messages, REPEATS, baseline, |options| {
            consume(&broker, &next_durable(), options)
        });
    }
    let relay_options = broker.relay_options();
    relay_table(
        "published to JetStream, each confirmed",
        env_number("BENCH_RELAY_ROWS", 5_000) as usize,
        REPEATS,
        || {
            broker
                .block_on(NatsSink::connect(&relay_options))
                .expect("connect")
        },
    );
}

/// Publishes `count` messages, a share of them second copies of an earlier
/// event, and returns how many distinct events there are.
fn publish(broker: &Broker, count: usize) -> usize {
    let mut payments = Payments::new(0x0b0e_5eed);
    for (n, payment) in payments.by_ref().take(count).enumerate() {
        broker.publish_body(&payment.envelope.to_string(), &format!("publish-{n}"));
    }
    payments.distinct()
}

/// Seconds a bare consumer with `workers` pulling tasks takes to pull and
/// acknowledge the whole stream.
fn pull_and_acknowledge(broker: &Broker, durable: &str, workers: usize) -> f64 {
    let consumer = broker.block_on(async {
        let client = async_nats::connect(nats_url()).await.expect("connect");
        jetstream::new(client)
            .get_stream(&broker.stream)
            .await
            .expect("stream")
            .create_consumer(consumer_config(durable, ACK_WAIT))
            .await
            .expect("consumer")
    });
    let started = Instant::now();
    let pullers: Vec<_> = (0..workers)
        .map(|_| {
            let consumer = consumer.clone();
            broker.spawn(async move {
                let mut acknowledging = JoinSet::new();
                loop {
                    let mut pull = consumer
                        .batch()
                        .max_messages(PULL_BATCH)
                        .expires(Duration::from_secs(1))
                        .messages()
                        .await
                        .expect("pull");
                    while let Some(Ok(message)) = pull.next().await {
                        let (_, acker) = message.split();
                        acknowledging
                            .spawn(async move { acker.double_ack_with(AckKind::Ack).await });
                        while acknowledging.try_join_next().is_some() {}
                    }
                }
            })
        })
        .collect();
    wait_until_drained(broker, durable);
    let seconds = started.elapsed().as_secs_f64();
    pullers.iter().for_each(|puller| puller.abort());
    seconds
}

/// Seconds `consume`'s source, pipeline and inbox take to work through the
/// whole stream on a fresh database.
fn consume(broker: &Broker, durable: &str, options: Options) -> f64 {
    let fixture = fixture_with_accounts();
    let database = fixture.database();
    let policy = Policy::default();
    let (source, settled) = broker
        .block_on(broker.options(durable, ACK_WAIT).connect())
        .expect("connect");
    let stop = Arc::new(Stop::default());
    let started = Instant::now();
    let run = broker.spawn(pipeline::run_until(
        Box::new(source),
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        move || database.inbox(policy),
        options,
        stop.clone(),
    ));
    wait_until_drained(broker, durable);
    let seconds = started.elapsed().as_secs_f64();
    stop.raise();
    broker.block_on(run).expect("task").expect("pipeline");
    broker.block_on(settled.finish());
    seconds
}

/// Polls the server until `durable` has nothing pending or unacknowledged.
fn wait_until_drained(broker: &Broker, durable: &str) {
    let done = Backlog {
        pending: 0,
        unacknowledged: 0,
    };
    let patience = Instant::now();
    while broker.backlog(durable) != done {
        assert!(
            patience.elapsed() < Duration::from_secs(600),
            "{durable} did not drain in 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
