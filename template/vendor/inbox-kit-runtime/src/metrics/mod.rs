//! Metrics a Prometheus server scrapes, and the health endpoints an
//! orchestrator polls: `run` and `consume` with `--metrics-addr` serve
//! them (see [`http`]).
//!
//! A consumer that runs for weeks is operated through these, not through
//! its summary line, so they count exactly what the summary counts: every
//! delivery once, by consumer and outcome, from the same outcomes the
//! pipeline settles by (it calls [`Metrics`] through the backend-neutral
//! [`crate::meter::Meter`]). Labels are bounded: a consumer's name and
//! one of five outcomes, never a message id. Names follow Prometheus
//! conventions: counters end in `_total`, units are in the name.
//!
//! Given the database ([`Metrics::watching`]), a scrape also reads what
//! waits there (see `backlog.rs`), and readiness asks it whether it is
//! reachable and migrated (see [`health`]).
//!
//! The registry is the Prometheus project's own Rust client
//! (`prometheus-client`): no global state, so every run, and every test,
//! has registries of its own.

mod backlog;
mod broker;
pub mod health;
pub mod http;

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::delivery::Delivery;
use crate::handler::{self, Subscriber};
use crate::inbox::{FAILED_INDEX, Outcome};
use crate::meter::{BatchEnd, Meter, RelayCounts};
use crate::source::BrokerProbe;
use crate::storage::StorageError;
pub use backlog::Backlog;
use backlog::BacklogGauges;
use broker::BrokerGauges;
use health::InFlight;

/// Which deliveries a series counts.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeliveryLabels {
    consumer: &'static str,
    outcome: &'static str,
}

/// Whose redeliveries a series counts.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConsumerLabels {
    consumer: &'static str,
}

/// What the metrics read from the database at each scrape and readiness
/// check: a project's store implements it (in the unit tests, a stand-in
/// that can fail on demand).
pub trait Watched: Send + Sync {
    /// What waits for someone: dead letters and unsent notifications.
    fn backlog(&self) -> Result<Backlog, StorageError>;

    /// The tables of the consumer's schema that the database does not
    /// have (none: migrated), on a connection of its own that gives up
    /// quickly; an error if the database cannot be reached. Never creates
    /// anything.
    fn missing_tables(&self) -> Result<Vec<String>, StorageError>;
}

/// Which notifications a series counts: `sent` (confirmed), `already_there`
/// (the receiver had it: a resend), `failed` (retried later), `parked`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RelayLabels {
    outcome: &'static str,
}

/// A run's metrics, rendered on demand in the OpenMetrics text format
/// (which Prometheus scrapes), and what its health endpoints answer.
pub struct Metrics {
    registry: Registry,
    deliveries: Family<DeliveryLabels, Counter>,
    redeliveries: Family<ConsumerLabels, Counter>,
    batch_deliveries: Histogram,
    commit_duration: Histogram,
    relay_sends: Family<RelayLabels, Counter>,
    known: Vec<KnownConsumer>,
    in_flight: InFlight,
    watched: Option<(Box<dyn Watched>, BacklogGauges)>,
    broker: Option<BrokerGauges>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("watches_a_database", &self.watched.is_some())
            .field("probes_a_broker", &self.broker.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let deliveries = Family::<DeliveryLabels, Counter>::default();
        let redeliveries = Family::<ConsumerLabels, Counter>::default();
        // 1, 2, 4 ... 1024 deliveries.
        let batch_deliveries = Histogram::new(exponential_buckets(1.0, 2.0, 11));
        // 0.25 ms to about 4 s.
        let commit_duration = Histogram::new(exponential_buckets(0.000_25, 2.0, 15));
        let relay_sends = Family::<RelayLabels, Counter>::default();
        let mut registry = Registry::default();
        registry.register(
            "inbox_deliveries",
            "Deliveries (one message to one consumer) by consumer and outcome",
            deliveries.clone(),
        );
        registry.register(
            "inbox_redeliveries",
            "Deliveries of a message the source had delivered before",
            redeliveries.clone(),
        );
        registry.register(
            "inbox_batch_deliveries",
            "Deliveries per transaction",
            batch_deliveries.clone(),
        );
        registry.register_with_unit(
            "inbox_commit_duration",
            "Time from a batch's first statement to its commit or rollback",
            Unit::Seconds,
            commit_duration.clone(),
        );
        registry.register(
            "relay_notifications",
            "Notifications the relay sent, by outcome (sent, already_there, failed, parked)",
            relay_sends.clone(),
        );
        Self {
            registry,
            deliveries,
            redeliveries,
            batch_deliveries,
            commit_duration,
            relay_sends,
            known: Vec::new(),
            in_flight: InFlight::default(),
            watched: None,
            broker: None,
        }
    }
}

impl Metrics {
    /// Metrics that also read `watched` (a project's store) at every
    /// scrape and readiness check, with every series of `consumers` (and
    /// of the relay) there from the start, at zero: a series that appears only with its first event
    /// makes `rate()` miss that event, and a dashboard show "no data"
    /// where the truth is none. (Their handles are kept, so counting a
    /// delivery takes no lock.)
    pub fn watching(watched: impl Watched + 'static, consumers: &[&'static str]) -> Self {
        let mut metrics = Self::default();
        let gauges = BacklogGauges::registered(&mut metrics.registry);
        metrics.watched = Some((Box::new(watched), gauges));
        let known = consumers
            .iter()
            .map(|&consumer| KnownConsumer {
                consumer,
                outcomes: Outcome::LABELS.map(|outcome| {
                    metrics
                        .deliveries
                        .get_or_create(&DeliveryLabels { consumer, outcome })
                        .clone()
                }),
                redeliveries: metrics
                    .redeliveries
                    .get_or_create(&ConsumerLabels { consumer })
                    .clone(),
            })
            .collect();
        metrics.known = known;
        for outcome in RELAY_OUTCOMES {
            metrics
                .relay_sends
                .get_or_create(&RelayLabels { outcome })
                .inc_by(0);
        }
        metrics
    }

    /// The same metrics, also asking the source's broker at every scrape
    /// (its pending count) and readiness check (whether it answers).
    pub fn probing(mut self, probe: Box<dyn BrokerProbe>) -> Self {
        self.broker = Some(BrokerGauges::registered(&mut self.registry, probe));
        self
    }

    /// Every series, as a scrape of `/metrics` returns them (reading the
    /// backlog first, if watching a database, and the broker's, if
    /// probing one: this blocks on them).
    pub fn render(&self) -> String {
        if let Some((watched, gauges)) = &self.watched {
            gauges.refresh(watched.backlog());
        }
        if let Some(broker) = &self.broker {
            broker.refresh();
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// Counts one delivery of `consumer` with the outcome
    /// `Outcome::LABELS[outcome]`
    /// (and its redelivery): through the handles made up front for the
    /// consumers known from the start, without the family's lock and hash
    /// (this runs for every delivery); through the family for any other.
    fn count(&self, consumer: &'static str, outcome: usize, redelivered: bool) {
        if let Some(known) = self.known.iter().find(|known| known.consumer == consumer) {
            known.outcomes[outcome].inc();
            if redelivered {
                known.redeliveries.inc();
            }
            return;
        }
        let outcome = Outcome::LABELS[outcome];
        self.deliveries
            .get_or_create(&DeliveryLabels { consumer, outcome })
            .inc();
        if redelivered {
            self.redeliveries
                .get_or_create(&ConsumerLabels { consumer })
                .inc();
        }
    }
}

/// A consumer's series, made when the metrics were.
struct KnownConsumer {
    consumer: &'static str,
    /// One per label of [`Outcome::LABELS`], in its order.
    outcomes: [Counter; 5],
    redeliveries: Counter,
}

/// Every outcome label of the relay's sends, as [`Meter::relayed`] counts
/// them.
const RELAY_OUTCOMES: [&str; 4] = ["sent", "already_there", "failed", "parked"];

impl<R: handler::Registry> Meter<R> for Metrics {
    fn batch_began(&self) {
        self.in_flight.began();
    }

    fn batch_ended(&self, deliveries: &[Delivery<'_, R>], how: BatchEnd<'_>, took: Duration) {
        self.in_flight.ended();
        let outcomes: Box<dyn Iterator<Item = usize>> = match how {
            BatchEnd::Committed(outcomes) => Box::new(outcomes.iter().map(Outcome::index)),
            BatchEnd::RolledBack => Box::new(std::iter::repeat(FAILED_INDEX)),
        };
        for (delivery, outcome) in deliveries.iter().zip(outcomes) {
            let consumer = delivery.handler.consumer();
            self.count(consumer, outcome, delivery.delivered > 1);
        }
        self.batch_deliveries.observe(deliveries.len() as f64);
        self.commit_duration.observe(took.as_secs_f64());
    }

    fn relayed(&self, counts: &RelayCounts) {
        let [sent, already_there, failed, parked] = RELAY_OUTCOMES;
        for (outcome, count) in [
            (sent, counts.sent - counts.already_there),
            (already_there, counts.already_there),
            (failed, counts.failed),
            (parked, counts.parked),
        ] {
            if count > 0 {
                self.relay_sends
                    .get_or_create(&RelayLabels { outcome })
                    .inc_by(count);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::SystemTime;

    use super::*;
    use crate::inbox::unix_millis;
    use crate::message::{Message, MessageId};
    use crate::storage::StorageFault;

    /// A consumer known by its name alone: all that metrics read of a
    /// delivery's handler.
    struct Named(&'static str);

    impl Subscriber<()> for Named {
        fn consumer(&self) -> &'static str {
            self.0
        }

        fn subscribes_to(&self, _: &()) -> bool {
            true
        }
    }

    const DEBIT: Named = Named("debit");
    const NOTIFY: Named = Named("notify");

    /// A project of named consumers on events that carry nothing.
    struct Consumers;

    impl handler::Registry for Consumers {
        type Event = ();
        type Handler<'a> = dyn Subscriber<()> + 'a;
        fn has_set_based(_: &Self::Handler<'_>) -> bool {
            false
        }
        fn encode(_: &()) -> (&'static str, String) {
            ("nothing", String::new())
        }
        fn partition_key(_: &()) -> u64 {
            0
        }
        fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a> {
            handler
        }
    }

    fn payment(id: &str) -> Message<()> {
        Message {
            id: MessageId::new(id).expect("a valid id"),
            event: (),
            trace_parent: None,
        }
    }

    /// A first delivery of `message` to `consumer`.
    fn delivery<'a>(consumer: &'a Named, message: &'a Message<()>) -> Delivery<'a, Consumers> {
        Delivery::new(consumer as &dyn Subscriber<()>, message)
    }

    /// `metrics` as the meter of [`Consumers`]' runs (where no delivery
    /// says whose meter it is).
    fn meter(metrics: &Metrics) -> &dyn Meter<Consumers> {
        metrics
    }

    #[test]
    fn every_delivery_is_counted_once_by_consumer_and_outcome() {
        let metrics = Metrics::default();
        let (a, b, c) = (payment("a"), payment("b"), payment("c"));
        let redelivered = Delivery {
            delivered: 2,
            ..delivery(&DEBIT, &b)
        };
        metrics.batch_ended(
            &[delivery(&DEBIT, &a), redelivered],
            BatchEnd::Committed(&[Outcome::Applied, Outcome::Duplicate]),
            Duration::from_millis(3),
        );
        metrics.batch_ended(
            &[delivery(&DEBIT, &c)],
            BatchEnd::RolledBack,
            Duration::from_millis(1),
        );
        let text = metrics.render();
        for expected in [
            r#"inbox_deliveries_total{consumer="debit",outcome="applied"} 1"#,
            r#"inbox_deliveries_total{consumer="debit",outcome="duplicate"} 1"#,
            r#"inbox_deliveries_total{consumer="debit",outcome="failed"} 1"#,
            r#"inbox_redeliveries_total{consumer="debit"} 1"#,
            "inbox_batch_deliveries_sum 3.0",
            "inbox_batch_deliveries_count 2",
            r#"inbox_batch_deliveries_bucket{le="1.0"} 1"#,
            r#"inbox_batch_deliveries_bucket{le="2.0"} 2"#,
            "inbox_commit_duration_seconds_sum 0.004",
            "inbox_commit_duration_seconds_count 2",
            r#"inbox_commit_duration_seconds_bucket{le="0.002"} 1"#,
            r#"inbox_commit_duration_seconds_bucket{le="0.004"} 2"#,
        ] {
            assert!(
                text.lines().any(|line| line == expected),
                "missing `{expected}` in:\n{text}"
            );
        }
        assert_eq!(
            text.lines()
                .filter(|line| line.starts_with("inbox_deliveries_total"))
                .count(),
            3,
            "{text}"
        );
    }

    /// A database that is there or not, on demand.
    struct StandIn {
        reachable: Arc<AtomicBool>,
        backlog: Backlog,
        missing: Vec<String>,
    }

    impl StandIn {
        /// There, migrated, with nothing waiting.
        fn healthy() -> Self {
            Self {
                reachable: Arc::new(AtomicBool::new(true)),
                backlog: Backlog::default(),
                missing: Vec::new(),
            }
        }

        fn reach(&self) -> Result<(), StorageError> {
            if self.reachable.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(StorageError::new(StorageFault::Other, "away"))
            }
        }
    }

    impl Watched for StandIn {
        fn backlog(&self) -> Result<Backlog, StorageError> {
            self.reach().map(|()| self.backlog.clone())
        }

        fn missing_tables(&self) -> Result<Vec<String>, StorageError> {
            self.reach().map(|()| self.missing.clone())
        }
    }

    fn has_line(text: &str, expected: &str) -> bool {
        text.lines().any(|line| line == expected)
    }

    #[test]
    fn a_scrape_reads_the_backlog_and_keeps_it_when_the_database_is_away() {
        let reachable = Arc::new(AtomicBool::new(true));
        let queued_at = unix_millis(SystemTime::now()) - 90_000;
        let metrics = Metrics::watching(
            StandIn {
                reachable: reachable.clone(),
                backlog: Backlog {
                    dead_letters: vec![("debit".to_owned(), 2), ("refund".to_owned(), 1)],
                    unsent: 7,
                    oldest_unsent_at: Some(queued_at),
                },
                missing: Vec::new(),
            },
            &[],
        );
        let text = metrics.render();
        for expected in [
            r#"inbox_dead_letters{consumer="debit"} 2"#,
            r#"inbox_dead_letters{consumer="refund"} 1"#,
            "outbox_unsent_notifications 7",
            "inbox_backlog_read_failures_total 0",
        ] {
            assert!(
                has_line(&text, expected),
                "missing `{expected}` in:\n{text}"
            );
        }
        let age: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix("outbox_oldest_unsent_age_seconds "))
            .expect("the age")
            .parse()
            .expect("a number");
        assert!((90.0..120.0).contains(&age), "waited 90 s, reported {age}");

        reachable.store(false, Ordering::SeqCst);
        let text = metrics.render();
        assert!(
            has_line(&text, "inbox_backlog_read_failures_total 1"),
            "{text}"
        );
        assert!(has_line(&text, "outbox_unsent_notifications 7"), "{text}");
    }

    #[test]
    fn every_series_of_the_consumers_is_there_from_the_start() {
        let metrics = Metrics::watching(StandIn::healthy(), &["debit", "notify"]);
        let text = metrics.render();
        for outcome in ["applied", "duplicate", "failed", "dead_lettered", "refused"] {
            let line = [
                r#"inbox_deliveries_total{consumer="debit",outcome=""#,
                outcome,
                r#""} 0"#,
            ]
            .concat();
            assert!(has_line(&text, &line), "missing `{line}` in:\n{text}");
        }
        for outcome in ["sent", "already_there", "failed", "parked"] {
            let line = [r#"relay_notifications_total{outcome=""#, outcome, r#""} 0"#].concat();
            assert!(has_line(&text, &line), "missing `{line}` in:\n{text}");
        }
        assert!(has_line(
            &text,
            r#"inbox_redeliveries_total{consumer="debit"} 0"#
        ));

        // Counted through the handles kept for a known consumer.
        let message = payment("a");
        let redelivered = Delivery {
            delivered: 3,
            ..delivery(&DEBIT, &message)
        };
        metrics.batch_ended(
            &[redelivered],
            BatchEnd::Committed(&[Outcome::Refused("no".into())]),
            Duration::ZERO,
        );
        metrics.batch_ended(&[redelivered], BatchEnd::RolledBack, Duration::ZERO);
        // Each known consumer through its own handles, never another's.
        metrics.batch_ended(
            &[delivery(&NOTIFY, &message)],
            BatchEnd::Committed(&[Outcome::Applied]),
            Duration::ZERO,
        );
        let text = metrics.render();
        for expected in [
            r#"inbox_deliveries_total{consumer="debit",outcome="refused"} 1"#,
            r#"inbox_deliveries_total{consumer="debit",outcome="failed"} 1"#,
            r#"inbox_deliveries_total{consumer="debit",outcome="applied"} 0"#,
            r#"inbox_redeliveries_total{consumer="debit"} 2"#,
            r#"inbox_deliveries_total{consumer="notify",outcome="applied"} 1"#,
            r#"inbox_deliveries_total{consumer="notify",outcome="failed"} 0"#,
            r#"inbox_redeliveries_total{consumer="notify"} 0"#,
        ] {
            assert!(
                has_line(&text, expected),
                "missing `{expected}` in:\n{text}"
            );
        }
    }

    #[test]
    fn no_backlog_is_no_lag() {
        let metrics = Metrics::watching(StandIn::healthy(), &[]);
        let text = metrics.render();
        assert!(
            has_line(&text, "outbox_oldest_unsent_age_seconds 0.0"),
            "{text}"
        );
        assert!(has_line(&text, "outbox_unsent_notifications 0"), "{text}");
        assert!(!text.contains("inbox_dead_letters{"), "{text}");
    }

    #[test]
    fn ready_while_the_database_answers_and_has_every_table() {
        let reachable = Arc::new(AtomicBool::new(true));
        let metrics = Metrics::watching(
            StandIn {
                reachable: reachable.clone(),
                ..StandIn::healthy()
            },
            &[],
        );
        assert_eq!(metrics.readiness(), Ok(()));
        reachable.store(false, Ordering::SeqCst);
        let unready = metrics.readiness().expect_err("the database is away");
        assert!(unready.contains("unreachable"), "{unready}");
        reachable.store(true, Ordering::SeqCst);
        assert_eq!(metrics.readiness(), Ok(()));

        let unmigrated = Metrics::watching(
            StandIn {
                missing: vec!["inbox".to_owned(), "attempts".to_owned()],
                ..StandIn::healthy()
            },
            &[],
        );
        assert_eq!(
            unmigrated.readiness(),
            Err("migrations not applied: no table inbox, attempts".to_owned())
        );
    }

    #[test]
    fn live_unless_a_batch_has_run_past_the_limit() {
        let metrics = Metrics::default();
        assert_eq!(metrics.liveness(Duration::ZERO), Ok(()), "idle is live");
        let (message, day) = (payment("a"), Duration::from_secs(86_400));
        meter(&metrics).batch_began();
        assert_eq!(metrics.liveness(day), Ok(()), "within the limit");
        let stuck = metrics
            .liveness(Duration::ZERO)
            .expect_err("past the limit");
        assert!(stuck.starts_with("stuck"), "{stuck}");
        // Another worker ending its batch does not free this one's.
        std::thread::scope(|scope| {
            scope.spawn(|| {
                meter(&metrics).batch_began();
                meter(&metrics).batch_ended(&[], BatchEnd::Committed(&[]), Duration::ZERO);
            });
        });
        assert!(metrics.liveness(Duration::ZERO).is_err());
        metrics.batch_ended(
            &[delivery(&DEBIT, &message)],
            BatchEnd::Committed(&[Outcome::Applied]),
            Duration::ZERO,
        );
        assert_eq!(metrics.liveness(Duration::ZERO), Ok(()));
    }

    #[test]
    fn relay_sends_are_counted_by_outcome_each_once() {
        let metrics = Metrics::default();
        meter(&metrics).relayed(&RelayCounts {
            sent: 5,
            already_there: 2,
            failed: 1,
            parked: 0,
        });
        meter(&metrics).relayed(&RelayCounts {
            sent: 1,
            already_there: 0,
            failed: 0,
            parked: 3,
        });
        let text = metrics.render();
        for expected in [
            r#"relay_notifications_total{outcome="sent"} 4"#,
            r#"relay_notifications_total{outcome="already_there"} 2"#,
            r#"relay_notifications_total{outcome="failed"} 1"#,
            r#"relay_notifications_total{outcome="parked"} 3"#,
        ] {
            assert!(
                has_line(&text, expected),
                "missing `{expected}` in:\n{text}"
            );
        }
    }

    /// A broker that holds as many messages as it is told, or cannot be
    /// asked.
    struct Broker(Arc<std::sync::Mutex<Result<u64, String>>>);

    impl BrokerProbe for Broker {
        fn pending(&self) -> Result<u64, String> {
            self.0.lock().unwrap().clone()
        }
    }

    #[test]
    fn a_probed_broker_is_read_at_each_scrape_and_asked_for_readiness() {
        let answer = Arc::new(std::sync::Mutex::new(Ok(7)));
        let metrics = Metrics::default().probing(Box::new(Broker(answer.clone())));
        let text = metrics.render();
        assert!(has_line(&text, "broker_pending_messages 7"), "{text}");
        assert!(has_line(&text, "broker_probe_failures_total 0"), "{text}");
        assert_eq!(metrics.readiness(), Ok(()));

        *answer.lock().unwrap() = Err("down".to_owned());
        let text = metrics.render();
        assert!(
            has_line(&text, "broker_pending_messages 7"),
            "the last value is kept: {text}"
        );
        assert!(has_line(&text, "broker_probe_failures_total 1"), "{text}");
        assert_eq!(
            metrics.readiness(),
            Err("broker unreachable: down".to_owned())
        );
    }
}
