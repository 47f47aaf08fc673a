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
//! The registry is the Prometheus project's own Rust client
//! (`prometheus-client`): no global state, so every run, and every test,
//! has registries of its own.

pub mod http;

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::inbox::{Delivery, Outcome};
use crate::pipeline::{BatchEnd, Meter};

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

/// A run's metrics, rendered on demand in the OpenMetrics text format
/// (which Prometheus scrapes).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    deliveries: Family<DeliveryLabels, Counter>,
    redeliveries: Family<ConsumerLabels, Counter>,
    batch_deliveries: Histogram,
    commit_duration: Histogram,
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
        }
    }
}

impl Metrics {
    /// Every series, as a scrape of `/metrics` returns them.
    pub fn render(&self) -> String {
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
}
