//! The consumer on a real broker: NATS JetStream. Each test has a stream and
//! a durable consumer of its own and ends in exactly the once-only state,
//! and each one that is about redelivery checks that redeliveries really
//! happened (a run that saw none would prove nothing).
//!
//! * `duplicates`: every event published twice, first attempts failing;
//! * `acks`: lost acknowledgements, a storage error, a slow handler;
//! * `settles`: every settle is confirmed by the server, checked through a
//!   proxy that withholds some (and a source that never waits is caught);
//! * `poison`: a message that always fails is dead-lettered and terminated;
//! * `relay`: the outbox relayed to JetStream, a resend absorbed;
//! * `health`: the pending count a scrape reports, and readiness with a
//!   server of the test's own stopped and restarted;
//! * `traces`: a producer's `traceparent` header followed to the spans and
//!   the relayed notifications;
//! * `processes`: `consume` killed mid-run and restarted, stopped by
//!   SIGTERM{% if database == "postgres" %}, three processes sharing one consumer{% endif %}.
//!
//! They need a NATS server with JetStream (`NATS_URL`, default
//! nats://127.0.0.1:4222) and fail, saying how to start one, without it.

#[path = "../support/mod.rs"]
mod support;

#[path = "../kit/mod.rs"]
mod kit;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use {{crate_name}}::event::Event;
use {{crate_name}}::handlers::{AnyHandler, Handlers};
use {{crate_name}}::inbox::{Inbox, StorageError};
use {{crate_name}}::pipeline::{self, Report};
use {{crate_name}}::source::{Source, Stop};

use kit::consume::{in_process_options, real_inbox};
use support::nats::proxy::{SettleCounts, SettleProxy, Withhold, withhold_nothing};
use support::nats::{Broker, nats_address};
use unconfirmed::FireAndForget;

/// How long a test waits for a consumer to work through its stream before
/// it gives up: a bound for a hung run, far above any real one.
const PATIENCE: Duration = Duration::from_secs(120);

/// What a consumer saw, as its source counted it, and what the settle
/// proxy between it and the server saw.
#[derive(Debug)]
struct Seen {
    report: Report,
    /// Deliveries the broker marked as redeliveries.
    redelivered: u64,
    /// Messages terminated at the broker.
    terminated: u64,
    /// Settles (acks, naks, terms) the source counts as confirmed.
    confirmed: u64,
    /// Settles the source counts as not confirmed by the server.
    unconfirmed: u64,
    /// The settles, as the proxy saw them.
    settles: SettleCounts,
}

impl Seen {
    /// What is wrong with the source's settles, if anything: each must ask
    /// the server to confirm it, and the source must count exactly the
    /// ones the server got as confirmed.
    fn settle_problems(&self) -> Vec<String> {
        self.settles.problems(self.confirmed, self.unconfirmed)
    }
}

/// What a test puts around the JetStream source: a test double that loses
/// acknowledgements, or nothing.
type Wrap = Box<dyn FnOnce(Box<dyn Source<Event>>) -> Box<dyn Source<Event>>>;

/// The source a test consumes with.
enum SourceKind {
    /// The JetStream source, wrapped.
    Real(Wrap),
    /// The known-broken source whose acknowledgements are never confirmed.
    FireAndForget,
}

/// Consumes `broker`'s stream in this process, with `handlers`, opening
/// inboxes with `open`, through the source `wrap` makes of the JetStream
/// one, until the durable consumer has nothing left; then stops, checks
/// that every settle was confirmed by the server, and returns what it saw.
fn consume_until_drained<I, F>(
    broker: &Broker,
    handlers: Vec<Arc<AnyHandler>>,
    open: F,
    ack_wait: Duration,
    wrap: impl FnOnce(Box<dyn Source<Event>>) -> Box<dyn Source<Event>> + 'static,
) -> Seen
where
    I: Inbox<Handlers> + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let seen = consume_through_proxy(
        broker,
        SourceKind::Real(Box::new(wrap)),
        withhold_nothing,
        handlers,
        open,
        ack_wait,
    );
    let problems = seen.settle_problems();
    assert!(
        problems.is_empty(),
        "settles not confirmed by the server: {}",
        problems.join("; ")
    );
    seen
}

/// Like [`consume_until_drained`], with any source, through a settle proxy
/// that withholds the settles `withhold` picks; checks nothing.
fn consume_through_proxy<I, F>(
    broker: &Broker,
    source: SourceKind,
    withhold: Withhold,
    handlers: Vec<Arc<AnyHandler>>,
    open: F,
    ack_wait: Duration,
) -> Seen
where
    I: Inbox<Handlers> + 'static,
    F: Fn() -> Result<I, StorageError> + Send + Sync + 'static,
{
    let proxy = SettleProxy::start(&nats_address(), withhold);
    let durable = "consumer";
    let mut nats = broker.options(durable, ack_wait);
    nats.nats_url = proxy.url.clone();
    let (source, counts, settled) = broker.block_on(async {
        match source {
            SourceKind::Real(wrap) => {
                let (source, settled) = nats.connect().await.expect("connect to the stream");
                let counts = source.counts();
                (wrap(Box::new(source)), counts, Some(settled))
            }
            SourceKind::FireAndForget => {
                let source = FireAndForget::connect(&nats).await;
                let counts = source.counts();
                (Box::new(source) as Box<dyn Source<Event>>, counts, None)
            }
        }
    });
    let stop = Arc::new(Stop::default());
    let options = in_process_options();
    let run = broker.spawn(pipeline::run_until(
        source,
        handlers,
        open,
        options,
        stop.clone(),
    ));
    let drained = broker.drained(durable, PATIENCE);
    stop.raise();
    let report = broker
        .block_on(run)
        .expect("the pipeline task")
        .expect("the pipeline");
    if let Some(settled) = settled {
        broker.block_on(settled.finish());
    }
    assert!(
        drained,
        "the consumer did not work through its stream in {PATIENCE:?}"
    );
    let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
    Seen {
        report,
        redelivered: count(&counts.redelivered),
        terminated: count(&counts.terminated),
        confirmed: count(&counts.acknowledged) + count(&counts.retried) + count(&counts.terminated),
        unconfirmed: count(&counts.unconfirmed),
        settles: proxy.counts(),
    }
}

mod acks;
mod duplicates;
mod health;
mod poison;
mod processes;
mod relay;
{%- if database == "postgres" %}
mod scale_out;
{%- endif %}
mod settles;
mod traces;
mod unconfirmed;
