//! Metrics that miscount. Caught by `metrics::a_miscounting_exporter_is_caught`
//! (tests/reliability), through the same check that passes the real one.

use std::time::Duration;

use {{crate_name}}::handlers::Handlers;
use {{crate_name}}::inbox::{Delivery, Outcome};
use {{crate_name}}::meter::{BatchEnd, Meter};
use {{crate_name}}::metrics::Metrics;

/// Counts a duplicate as applied: a dashboard that shows every redelivery
/// as new work, and hides that the inbox is doing its job.
#[derive(Debug, Default)]
pub struct DuplicatesCountedAsApplied(pub Metrics);

impl Meter<Handlers> for DuplicatesCountedAsApplied {
    fn batch_ended(&self, deliveries: &[Delivery<'_>], how: BatchEnd<'_>, took: Duration) {
        match how {
            BatchEnd::Committed(outcomes) => {
                let relabelled: Vec<Outcome> = outcomes
                    .iter()
                    .map(|outcome| match outcome {
                        Outcome::Duplicate => Outcome::Applied,
                        other => other.clone(),
                    })
                    .collect();
                self.0
                    .batch_ended(deliveries, BatchEnd::Committed(&relabelled), took);
            }
            rolled_back => self.0.batch_ended(deliveries, rolled_back, took),
        }
    }
}

/// Counts only what committed: a batch rolled back by a storage error
/// vanishes from the metrics, though the summary counts its deliveries as
/// failed (an outage looks like a quiet hour).
#[derive(Debug, Default)]
pub struct RollbacksNotCounted(pub Metrics);

impl Meter<Handlers> for RollbacksNotCounted {
    fn batch_ended(&self, deliveries: &[Delivery<'_>], how: BatchEnd<'_>, took: Duration) {
        if let BatchEnd::Committed(_) = how {
            self.0.batch_ended(deliveries, how, took);
        }
    }
}
