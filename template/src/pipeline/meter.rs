//! What a run tells whoever watches it from outside, one transaction at a
//! time: the seam between the pipeline and a metrics backend (this crate's
//! is Prometheus, in `crate::metrics`; another backend implements the same
//! trait and the pipeline does not change).
//!
//! The pipeline calls it on the worker's thread right after a transaction
//! ended, with the same outcomes it counts in its [`super::Summary`], so
//! what a dashboard shows and what the summary line says cannot drift
//! apart. An implementation must be cheap and must never block: it sits on
//! the path of every batch.

use std::time::Duration;

use crate::inbox::{Delivery, Outcome};

/// How a transaction over a batch ended.
#[derive(Clone, Copy, Debug)]
pub enum BatchEnd<'a> {
    /// Committed, with one outcome per delivery, in the batch's order.
    Committed(&'a [Outcome]),
    /// Rolled back by a storage error: every delivery failed and comes
    /// back on redelivery.
    RolledBack,
}

/// Watches a run's transactions.
pub trait Meter: Send + Sync + std::fmt::Debug {
    /// This worker (the calling thread) begins a transaction.
    fn batch_began(&self) {}

    /// This worker's transaction over `deliveries` ended `how`, `took`
    /// after it began.
    fn batch_ended(&self, deliveries: &[Delivery<'_>], how: BatchEnd<'_>, took: Duration);
}

/// Watches nothing: a run without `--metrics-addr`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unmetered;

impl Meter for Unmetered {
    fn batch_ended(&self, _: &[Delivery<'_>], _: BatchEnd<'_>, _: Duration) {}
}
