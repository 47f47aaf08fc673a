//! The broker's side of `consume --metrics-addr`: the pending count a
//! scrape reports is the server's own, and readiness follows a server of
//! the test's own away and back (the shared server is never stopped: other
//! tests use it meanwhile), with the consumer still working afterwards.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use {{crate_name}}::metrics::Metrics;
use {{crate_name}}::pipeline::PROGRESS_LINE;
use {{crate_name}}::source::BrokerProbe;

use crate::PATIENCE;
use crate::kit::metrics::{get, scrape, series, served_at};
use crate::processes::{DURABLE, consume_at};
use crate::support::harness::{RealInbox, assert_applied_once, fixture_for};
use crate::support::kill::Running;
use crate::support::nats::Broker;
use crate::support::nats::server::OwnServer;
use crate::support::subjects::{DebitSubject, payments};

/// The durable consumer's pending count, as one scrape reports it.
const PENDING: &str = "broker_pending_messages";

#[test]
fn the_pending_count_is_the_servers_waiting_plus_unsettled() {
    let broker = Broker::new();
    let durable = "pending";
    let (source, _settled) = broker
        .block_on(broker.options(durable, Duration::from_secs(30)).connect())
        .expect("connect the source");
    let probe = broker.block_on(async { source.probe() });
    let metrics = Metrics::default().probing(Box::new(probe));
    assert_eq!(series(&metrics.render(), PENDING)[""], 0.0);

    for message in &payments(5) {
        broker.publish(message, message.id.as_str());
    }
    // Nobody consumes: all five wait.
    assert_eq!(series(&metrics.render(), PENDING)[""], 5.0);
    // Two delivered and left unsettled still count: they are not done.
    assert_eq!(broker.take_unsettled(durable, 2), 2);
    let backlog = broker.backlog(durable);
    assert_eq!((backlog.pending, backlog.unacknowledged), (3, 2));
    assert_eq!(series(&metrics.render(), PENDING)[""], 5.0);
}

#[test]
fn a_probe_of_a_stopped_server_says_unreachable_and_the_gauge_keeps_its_value() {
    let mut server = OwnServer::start();
    let broker = Broker::at(&server.url());
    let durable = "probed";
    let (source, _settled) = broker
        .block_on(broker.options(durable, Duration::from_secs(30)).connect())
        .expect("connect the source");
    for message in &payments(3) {
        broker.publish(message, message.id.as_str());
    }
    let probe = broker.block_on(async { source.probe() });
    assert_eq!(probe.pending(), Ok(3));
    let metrics = Metrics::default().probing(Box::new(broker.block_on(async { source.probe() })));
    assert_eq!(metrics.readiness(), Ok(()));
    assert_eq!(series(&metrics.render(), PENDING)[""], 3.0);

    server.stop();
    let error = probe.pending().expect_err("the server is gone");
    assert!(!error.is_empty());
    let unready = metrics.readiness().expect_err("the server is gone");
    assert!(unready.starts_with("broker unreachable: "), "{unready}");
    let text = metrics.render();
    assert_eq!(series(&text, PENDING)[""], 3.0, "{text}");
    assert_eq!(series(&text, "broker_probe_failures_total")[""], 1.0);
}

/// Lines of a child's stderr, read on a thread of their own (so that the
/// child never blocks on a full pipe while the test waits elsewhere).
fn stderr_lines(child: &mut Child) -> Receiver<String> {
    let stderr = child.stderr.take().expect("stderr");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    received
}

/// Waits for the next progress line: a batch committed.
fn next_commit(stderr: &Receiver<String>) {
    let committed = stderr.iter().any(|line| line.starts_with(PROGRESS_LINE));
    assert!(committed, "consume ended before committing");
}

/// Asks `/health/ready` until it answers 200, for at most [`PATIENCE`]:
/// the client reconnects on its own, with growing waits.
fn ready_again(addr: &str) -> bool {
    let started = Instant::now();
    while started.elapsed() < PATIENCE {
        if get(addr, "/health/ready").0 == 200 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn readiness_follows_the_broker_away_and_back() {
    let mut server = OwnServer::start();
    let broker = Broker::at(&server.url());
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(2);
    let [first, second] = [&messages[0], &messages[1]];
    broker.publish(first, first.id.as_str());
    let mut consume = Running::start(
        consume_at(&fixture, &broker, &server.url())
            .args(["--metrics-addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let stderr = stderr_lines(consume.child());
    let addr = served_at(stderr.iter()).expect("consume printed no metrics address");
    next_commit(&stderr);
    assert_eq!(get(&addr, "/health/ready"), (200, "ready\n".to_owned()));

    server.stop();
    let (status, reason) = get(&addr, "/health/ready");
    assert_eq!(status, 503, "ready with the broker stopped: {reason}");
    assert!(reason.starts_with("broker unreachable: "), "{reason}");
    // Away is not stuck: no batch is in its transaction.
    assert_eq!(get(&addr, "/health/live"), (200, "live\n".to_owned()));
    let scraped = scrape(&addr);
    assert!(
        series(&scraped, "broker_probe_failures_total")[""] >= 1.0,
        "{scraped}"
    );

    server.restart();
    assert!(ready_again(&addr), "not ready after the broker came back");
    // And it consumes again: the outage did not end the run.
    broker.publish(second, second.id.as_str());
    next_commit(&stderr);
    assert!(
        broker.drained(DURABLE, PATIENCE),
        "consume did not finish the stream after the outage"
    );
    let pid = libc::pid_t::try_from(consume.child().id()).expect("a pid");
    // SAFETY: `kill` only sends a signal, to a child not yet reaped.
    let signalled = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(signalled, 0);
    let status = consume.child().wait().expect("consume exits");
    assert!(status.success(), "consume ended with {status}");
    assert_applied_once(&fixture, &debit, &messages);
}
