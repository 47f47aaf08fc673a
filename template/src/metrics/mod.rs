//! Metrics a Prometheus server scrapes: `run` and `consume` with
//! `--metrics-addr` serve them at `/metrics` (see [`http`]).
//!
//! A consumer that runs for weeks is operated through these, not through
//! its summary line, so they count exactly what the summary counts: every
//! delivery once, by consumer and outcome, from the same outcomes the
//! pipeline settles by (it calls [`Metrics`] through the backend-neutral
//! [`crate::pipeline::Meter`]). Labels are bounded: a consumer's name and
//! one of five outcomes, never a message id. Names follow Prometheus
//! conventions: counters end in `_total`, units are in the name.
//!
//! Given the database ([`Metrics::watching`]), a scrape also reads what
//! waits there: dead letters per consumer, and the outbox's unsent
//! notifications with the age of the oldest (the relay's lag). Those are
//! read at scrape time, on a connection of their own, so they are true
//! whichever process filled them.
//!
//! The registry is the Prometheus project's own Rust client
//! (`prometheus-client`): no global state, so every run, and every test,
//! has registries of its own.

pub mod http;

use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::inbox::{Delivery, Outcome, StorageError, unix_millis};
use crate::pipeline::{BatchEnd, Meter};
use crate::store::{Backlog, Store};

/// The outcome label of a delivery rolled back with its whole batch: it
/// counts as failed, as in the summary line.
const FAILED: &str = "failed";

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

/// Whose dead letters a series counts (a name read from the database).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeadLetterLabels {
    consumer: String,
}

/// A run's metrics, rendered on demand in the OpenMetrics text format
/// (which Prometheus scrapes).
pub struct Metrics {
    registry: Registry,
    deliveries: Family<DeliveryLabels, Counter>,
    redeliveries: Family<ConsumerLabels, Counter>,
    batch_deliveries: Histogram,
    commit_duration: Histogram,
    backlog: Option<BacklogGauges>,
}

/// What a scrape reads from the database, and where it puts it.
struct BacklogGauges {
    read: Box<dyn Fn() -> Result<Backlog, StorageError> + Send + Sync>,
    dead_letters: Family<DeadLetterLabels, Gauge>,
    unsent: Gauge,
    oldest_unsent_age: Gauge<f64, AtomicU64>,
    read_failures: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("reads_backlog", &self.backlog.is_some())
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
        Self {
            registry,
            deliveries,
            redeliveries,
            batch_deliveries,
            commit_duration,
            backlog: None,
        }
    }
}

impl Metrics {
    /// Metrics that also read `store`'s backlog at every scrape.
    pub fn watching(store: impl Store) -> Self {
        Self::reading_backlog(move || store.backlog())
    }

    /// Metrics that also call `read` at every scrape.
    fn reading_backlog(
        read: impl Fn() -> Result<Backlog, StorageError> + Send + Sync + 'static,
    ) -> Self {
        let mut metrics = Self::default();
        let gauges = BacklogGauges {
            read: Box::new(read),
            dead_letters: Family::default(),
            unsent: Gauge::default(),
            oldest_unsent_age: Gauge::default(),
            read_failures: Counter::default(),
        };
        let registry = &mut metrics.registry;
        registry.register(
            "inbox_dead_letters",
            "Dead letters waiting to be looked at or re-driven, by consumer",
            gauges.dead_letters.clone(),
        );
        registry.register(
            "outbox_unsent_notifications",
            "Notifications neither sent nor parked",
            gauges.unsent.clone(),
        );
        registry.register_with_unit(
            "outbox_oldest_unsent_age",
            "How long the oldest unsent notification has waited (0 when none is)",
            Unit::Seconds,
            gauges.oldest_unsent_age.clone(),
        );
        registry.register(
            "inbox_backlog_read_failures",
            "Scrapes that could not read the backlog from the database (its gauges then keep their last values)",
            gauges.read_failures.clone(),
        );
        metrics.backlog = Some(gauges);
        metrics
    }

    /// Every series, as a scrape of `/metrics` returns them (reading the
    /// backlog first, if watching a database: this blocks on it).
    pub fn render(&self) -> String {
        if let Some(gauges) = &self.backlog {
            gauges.refresh();
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String cannot fail");
        text
    }

    fn count(&self, consumer: &'static str, outcome: &'static str) {
        self.deliveries
            .get_or_create(&DeliveryLabels { consumer, outcome })
            .inc();
    }
}

impl BacklogGauges {
    fn refresh(&self) {
        let backlog = match (self.read)() {
            Ok(backlog) => backlog,
            Err(error) => {
                tracing::warn!(%error, "could not read the backlog for a scrape");
                self.read_failures.inc();
                return;
            }
        };
        self.dead_letters.clear();
        for (consumer, count) in backlog.dead_letters {
            self.dead_letters
                .get_or_create(&DeadLetterLabels { consumer })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        self.unsent
            .set(i64::try_from(backlog.unsent).unwrap_or(i64::MAX));
        let now = unix_millis(SystemTime::now());
        let waited = backlog
            .oldest_unsent_at
            .map_or(0, |queued_at| now.saturating_sub(queued_at).max(0));
        self.oldest_unsent_age.set(waited as f64 / 1000.0);
    }
}

/// The label of an outcome: the summary line's name for it.
fn outcome_label(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Applied => "applied",
        Outcome::Duplicate => "duplicate",
        Outcome::Failed(_) => FAILED,
        Outcome::DeadLettered(_) => "dead_lettered",
        Outcome::Refused(_) => "refused",
    }
}

impl Meter for Metrics {
    fn batch_ended(&self, deliveries: &[Delivery<'_>], how: BatchEnd<'_>, took: Duration) {
        let labels: Box<dyn Iterator<Item = &'static str>> = match how {
            BatchEnd::Committed(outcomes) => Box::new(outcomes.iter().map(outcome_label)),
            BatchEnd::RolledBack => Box::new(std::iter::repeat(FAILED)),
        };
        for (delivery, outcome) in deliveries.iter().zip(labels) {
            let consumer = delivery.handler.consumer();
            self.count(consumer, outcome);
            if delivery.delivered > 1 {
                self.redeliveries
                    .get_or_create(&ConsumerLabels { consumer })
                    .inc();
            }
        }
        self.batch_deliveries.observe(deliveries.len() as f64);
        self.commit_duration.observe(took.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Event, PaymentCaptured};
    use crate::handlers::Debit;
    use crate::message::{Message, MessageId};

    fn payment(id: &str) -> Message {
        Message {
            id: MessageId::new(id).expect("a valid id"),
            event: Event::PaymentCaptured(PaymentCaptured {
                account: 1,
                amount: 10,
            }),
        }
    }

    #[test]
    fn every_delivery_is_counted_once_by_consumer_and_outcome() {
        let metrics = Metrics::default();
        let (a, b, c) = (payment("a"), payment("b"), payment("c"));
        let redelivered = Delivery {
            delivered: 2,
            ..Delivery::new(&Debit, &b)
        };
        metrics.batch_ended(
            &[Delivery::new(&Debit, &a), redelivered],
            BatchEnd::Committed(&[Outcome::Applied, Outcome::Duplicate]),
            Duration::from_millis(3),
        );
        metrics.batch_ended(
            &[Delivery::new(&Debit, &c)],
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

    fn has_line(text: &str, expected: &str) -> bool {
        text.lines().any(|line| line == expected)
    }

    #[test]
    fn a_scrape_reads_the_backlog_and_keeps_it_when_the_database_is_away() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let reachable = std::sync::Arc::new(AtomicBool::new(true));
        let queued_at = unix_millis(SystemTime::now()) - 90_000;
        let metrics = Metrics::reading_backlog({
            let reachable = reachable.clone();
            move || {
                if !reachable.load(Ordering::SeqCst) {
                    return Err(StorageError::new(crate::inbox::StorageFault::Other, "away"));
                }
                Ok(Backlog {
                    dead_letters: vec![("debit".to_owned(), 2), ("refund".to_owned(), 1)],
                    unsent: 7,
                    oldest_unsent_at: Some(queued_at),
                })
            }
        });
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
    fn no_backlog_is_no_lag() {
        let metrics = Metrics::reading_backlog(|| Ok(Backlog::default()));
        let text = metrics.render();
        assert!(
            has_line(&text, "outbox_oldest_unsent_age_seconds 0.0"),
            "{text}"
        );
        assert!(has_line(&text, "outbox_unsent_notifications 0"), "{text}");
        assert!(!text.contains("inbox_dead_letters{"), "{text}");
    }
}
