//! What the broker holds for this consumer, read at every scrape through
//! the source's [`BrokerProbe`]: the messages it has not had acknowledged
//! (waiting, or delivered and unsettled). A consumer falling behind shows
//! here before anywhere else. A probe that fails keeps the last value and
//! is counted, as the database backlog's reads are.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::source::BrokerProbe;

/// The broker's series, and the probe that fills them.
pub(super) struct BrokerGauges {
    probe: Box<dyn BrokerProbe>,
    pending: Gauge,
    probe_failures: Counter,
}

impl BrokerGauges {
    /// The series, registered in `registry`, filled by `probe`.
    pub(super) fn registered(registry: &mut Registry, probe: Box<dyn BrokerProbe>) -> Self {
        let gauges = Self {
            probe,
            pending: Gauge::default(),
            probe_failures: Counter::default(),
        };
        registry.register(
            "broker_pending_messages",
            "Messages the broker holds for this consumer, not yet acknowledged (waiting, or delivered and unsettled)",
            gauges.pending.clone(),
        );
        registry.register(
            "broker_probe_failures",
            "Scrapes that could not ask the broker (its gauge then keeps its last value)",
            gauges.probe_failures.clone(),
        );
        gauges
    }

    /// Sets the series from what the broker says now.
    pub(super) fn refresh(&self) {
        match self.probe.pending() {
            Ok(pending) => {
                self.pending.set(i64::try_from(pending).unwrap_or(i64::MAX));
            }
            Err(error) => {
                tracing::warn!(%error, "could not ask the broker for a scrape");
                self.probe_failures.inc();
            }
        }
    }

    /// `Ok` if the broker answers; otherwise why not.
    pub(super) fn reachable(&self) -> Result<(), String> {
        self.probe
            .pending()
            .map(|_| ())
            .map_err(|error| format!("broker unreachable: {error}"))
    }
}
