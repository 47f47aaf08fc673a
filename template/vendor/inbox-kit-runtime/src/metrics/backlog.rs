//! What waits in the database, read at every scrape: dead letters per
//! consumer (for an operator), and the outbox's unsent notifications with
//! the age of the oldest (the relay's lag). Read at scrape time, on a
//! connection of their own, so they are true whichever process filled
//! them; a read that fails keeps the last values and is counted, so a
//! scrape still answers while the database is away.

use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::inbox::unix_millis;
use crate::storage::StorageError;

/// What waits in the database for someone to act: dead letters for an
/// operator, unsent notifications for the relay (see [`super::Watched`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Dead letters per consumer, by consumer name.
    pub dead_letters: Vec<(String, u64)>,
    /// Notifications neither sent nor parked.
    pub unsent: u64,
    /// When the oldest of them was queued, in milliseconds since the Unix
    /// epoch; `None` when there are none.
    pub oldest_unsent_at: Option<i64>,
}

/// Whose dead letters a series counts (a name read from the database).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeadLetterLabels {
    consumer: String,
}

/// The backlog's series.
pub(super) struct BacklogGauges {
    dead_letters: Family<DeadLetterLabels, Gauge>,
    unsent: Gauge,
    oldest_unsent_age: Gauge<f64, AtomicU64>,
    read_failures: Counter,
}

impl BacklogGauges {
    /// The series, registered in `registry`.
    pub(super) fn registered(registry: &mut Registry) -> Self {
        let gauges = Self {
            dead_letters: Family::default(),
            unsent: Gauge::default(),
            oldest_unsent_age: Gauge::default(),
            read_failures: Counter::default(),
        };
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
        gauges
    }

    /// Sets the series from what the database said.
    pub(super) fn refresh(&self, read: Result<Backlog, StorageError>) {
        let backlog = match read {
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
