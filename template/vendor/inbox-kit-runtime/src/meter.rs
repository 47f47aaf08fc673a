//! What a consumer tells whoever watches it from outside, one batch at a
//! time: the seam between the work (the pipeline's transactions, the
//! relay's sends) and a metrics backend. A project's backend (Prometheus
//! in a generated project) implements [`Meter`]; another backend
//! implements the same trait, and neither the pipeline nor the relay
//! changes. Runs that watch nothing use [`Unmetered`].
//!
//! Both call it right after a batch ended, with the same outcomes they
//! count in their summaries ([`crate::pipeline::Summary`],
//! [`RelayCounts`]), so what a dashboard shows and what the summary line
//! says cannot drift apart. An implementation must be cheap and must never
//! block: it sits on the path of every batch.

use std::time::Duration;

use crate::delivery::Delivery;
use crate::handler::Registry;
use crate::inbox::Outcome;

/// How a transaction over a batch ended.
#[derive(Clone, Copy, Debug)]
pub enum BatchEnd<'a> {
    /// Committed, with one outcome per delivery, in the batch's order.
    Committed(&'a [Outcome]),
    /// Rolled back by a storage error: every delivery failed and comes
    /// back on redelivery.
    RolledBack,
}

/// Watches a consumer's batches, for the project's handlers `R`.
pub trait Meter<R: Registry>: Send + Sync + std::fmt::Debug {
    /// This worker (the calling thread) begins a transaction.
    fn batch_began(&self) {}

    /// This worker's transaction over `deliveries` ended `how`, `took`
    /// after it began.
    fn batch_ended(&self, deliveries: &[Delivery<'_, R>], how: BatchEnd<'_>, took: Duration);

    /// The relay sent a batch of notifications and marked it: `counts`
    /// is that batch's.
    fn relayed(&self, counts: &RelayCounts) {
        let _ = counts;
    }
}

/// Watches nothing: a command without `--metrics-addr`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unmetered;

impl<R: Registry> Meter<R> for Unmetered {
    fn batch_ended(&self, _: &[Delivery<'_, R>], _: BatchEnd<'_>, _: Duration) {}
}

/// What a relay did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayCounts {
    pub sent: u64,
    /// Sends the receiver recognised as repeats (counted in `sent` too).
    pub already_there: u64,
    pub failed: u64,
    pub parked: u64,
}

impl std::fmt::Display for RelayCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sent={} already_there={} failed={} parked={}",
            self.sent, self.already_there, self.failed, self.parked
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_counts_print_every_count() {
        let counts = RelayCounts {
            sent: 4,
            already_there: 1,
            failed: 2,
            parked: 3,
        };
        assert_eq!(
            counts.to_string(),
            "sent=4 already_there=1 failed=2 parked=3"
        );
    }
}
