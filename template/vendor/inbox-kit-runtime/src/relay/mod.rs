//! The relay: the outbox's other half.
//!
//! A handler never calls out of its transaction; it writes an outbox row
//! (a project's `notify` writes one per channel) that commits or rolls
//! back with the delivery. The relay then sends those rows, and only
//! after a send was confirmed marks the row sent in the database:
//!
//! ```text
//! take due rows ──▶ send each (confirmed) ──▶ mark sent / count a failure ──▶ commit
//! ```
//!
//! A crash between sending and marking sends the row again on restart: at
//! least once, never zero. So every message carries an idempotency key
//! derived from the row, [`Notice::idempotency_key`], the same on every
//! resend, and a receiver with its own inbox applies it once.
//! Marking before sending would be the opposite mistake: a crash in between
//! loses the notification for good.
//!
//! A send that fails is counted and tried again later, waiting longer each
//! time; after [`RelayPolicy::max_attempts`] the row is parked: kept, never
//! sent again until requeued, and listed by `relay parked`.
//!
//! The rows are a project's ([`Notice`]: what it sends, and the key a
//! receiver deduplicates on). Where they come from is the project's
//! database module's [`Queue`]; where they go is a [`Sink`]: JSON lines
//! ([`lines`]), or a broker (`nats`, feature `nats`; `kafka`, feature
//! `kafka`).

#[cfg(feature = "kafka")]
pub mod kafka;
pub mod lines;
#[cfg(feature = "nats")]
pub mod nats;

pub use crate::meter::RelayCounts;

use std::time::{Duration, Instant};

use crate::handler::Registry;
use crate::meter::Meter;
use crate::progress::Progress;
use crate::stop::Stop;
use crate::storage::StorageError;
use crate::trace;

/// How each line of `relay send --progress-lines` starts: printed after a
/// batch was sent and before it is marked sent (the kill test aims there).
pub const PROGRESS_LINE: &str = "progress: sent a batch, marking it";

/// A row of a project's outbox, as the relay sends it.
pub trait Notice: Send {
    /// The envelope `type` of the messages sent for these rows.
    const TYPE: &'static str;

    /// The key a receiver deduplicates on: the same for every send of a
    /// row, different for every row.
    fn idempotency_key(&self) -> String;

    /// Which of the project's destinations it goes to (a broker's subject
    /// under the relay's prefix: `<prefix>.<topic>`).
    fn topic(&self) -> &str;

    /// The envelope's `payload`.
    fn payload(&self) -> serde_json::Value;

    /// The trace context of the delivery that queued it, which the relay's
    /// span continues and every send carries on.
    fn trace_parent(&self) -> Option<&str>;

    /// [`Notice::trace_parent`], for the relay's span to replace.
    fn trace_parent_mut(&mut self) -> &mut Option<String>;
}

/// A row taken from the outbox to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing<N> {
    pub key: String,
    pub notification: N,
    /// Failed sends so far.
    pub failures: u32,
}

/// What became of one send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The receiver confirmed it.
    Confirmed,
    /// The receiver confirmed it as a repeat of a key it already had (a
    /// broker's dedup window absorbed a resend).
    AlreadyThere,
    /// It failed; the reason is kept with the row.
    Failed(String),
    /// The destination is gone for good (the reader of a pipe went away):
    /// not the row's fault, so nothing is recorded for it, and the relay
    /// stops. The row is sent by the next relay.
    Closed(String),
}

impl Sent {
    /// Its name on the `relay` span.
    fn label(&self) -> &'static str {
        match self {
            Self::Confirmed => "sent",
            Self::AlreadyThere => "already_there",
            Self::Failed(_) => "failed",
            Self::Closed(_) => "closed",
        }
    }
}

/// Why a relay stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A send found the destination closed ([`Sent::Closed`]).
    #[error("the relay's output was closed: {0}")]
    SinkClosed(String),
}

/// Where notifications go.
pub trait Sink<N>: Send {
    /// Sends one notification and waits for the receiver to confirm it.
    fn send(&mut self, outgoing: &Outgoing<N>) -> Sent;
}

/// A notification parked after too many failed sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parked {
    pub key: String,
    pub failures: u32,
    pub last_error: String,
    /// Milliseconds since the Unix epoch.
    pub parked_at: i64,
}

/// The outbox of rows `N`, as the relay sees it (one connection's worth;
/// implemented by a project's database module).
pub trait Queue<N>: Send {
    /// Takes up to `limit` notifications that are due, oldest first. They
    /// are this relay's until [`Queue::settle`]: on PostgreSQL they stay
    /// locked and other relays skip them.
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing<N>>, StorageError>;

    /// Records what became of the notifications taken, in one transaction:
    /// sent ones are marked sent, failed ones counted and given a later
    /// try, or parked at `policy.max_attempts`.
    fn settle(
        &mut self,
        sent: &[(Outgoing<N>, Sent)],
        policy: RelayPolicy,
    ) -> Result<(), StorageError>;

    /// Notifications neither sent nor parked (due now or later).
    fn remaining(&mut self) -> Result<u64, StorageError>;

    /// Every parked notification, oldest first.
    fn parked(&mut self) -> Result<Vec<Parked>, StorageError>;

    /// Gives parked notifications (all, or those with `keys`) another
    /// round of attempts; returns how many.
    fn requeue(&mut self, keys: &[String]) -> Result<u64, StorageError>;
}

/// How the relay treats sends that fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelayPolicy {
    /// Failed sends after which a notification is parked.
    pub max_attempts: u32,
    /// The wait after a first failure; it doubles with each one, up to a
    /// minute.
    pub retry_after: Duration,
}

impl Default for RelayPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            retry_after: Duration::from_secs(1),
        }
    }
}

impl RelayPolicy {
    /// Whether a notification that has now failed `failures` times is
    /// parked.
    pub fn parks(self, failures: u32) -> bool {
        failures >= self.max_attempts
    }

    /// When a notification that failed for the `failures`-th time is tried
    /// again, in milliseconds after `now`.
    pub fn retry_at(self, now: i64, failures: u32) -> i64 {
        let wait = self
            .retry_after
            .saturating_mul(1 << failures.saturating_sub(1).min(16))
            .min(Duration::from_secs(60));
        now.saturating_add(i64::try_from(wait.as_millis()).unwrap_or(i64::MAX))
    }
}

/// Sends one batch: takes due notifications, sends each, then marks them.
/// A send that finds the destination closed ends the batch there: what was
/// sent before it is marked, the rest is left as it was, untouched.
pub fn relay_batch<N: Notice>(
    queue: &mut dyn Queue<N>,
    sink: &mut dyn Sink<N>,
    limit: usize,
    policy: RelayPolicy,
    progress: &Progress,
) -> Result<RelayCounts, RelayError> {
    let taken = queue.take(limit)?;
    let mut counts = RelayCounts::default();
    if taken.is_empty() {
        return Ok(counts);
    }
    let mut results: Vec<(Outgoing<N>, Sent)> = Vec::with_capacity(taken.len());
    let mut closed = None;
    for mut outgoing in taken {
        let span = trace::relay(outgoing.notification.trace_parent_mut(), &outgoing.key);
        let sent = span.in_scope(|| sink.send(&outgoing));
        span.record("outcome", sent.label());
        match &sent {
            Sent::Confirmed => counts.sent += 1,
            Sent::AlreadyThere => {
                counts.sent += 1;
                counts.already_there += 1;
            }
            Sent::Failed(_) if policy.parks(outgoing.failures + 1) => counts.parked += 1,
            Sent::Failed(_) => counts.failed += 1,
            Sent::Closed(reason) => {
                closed = Some(reason.clone());
                break;
            }
        }
        results.push((outgoing, sent));
    }
    if !results.is_empty() {
        progress.report(format_args!(
            "{PROGRESS_LINE} notifications={}",
            results.len()
        ));
    }
    // Settled even when the first send found the destination closed: it
    // ends the transaction that took the rows.
    queue.settle(&results, policy)?;
    match closed {
        Some(reason) => Err(RelayError::SinkClosed(reason)),
        None => Ok(counts),
    }
}

/// When the relay loop ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Every notification is sent or parked (rows waiting for a retry are
    /// waited for).
    Done,
    /// A stop (a signal).
    Stopped,
}

/// How a relay loop runs besides what it sends: when it ends, and who
/// watches it (a meter of the project's handlers `R`).
pub struct Watch<'a, R: Registry> {
    pub until: Until,
    pub stop: &'a Stop,
    /// Where each batch is reported once sent, before it is marked.
    pub progress: &'a Progress,
    /// Told each batch's counts once it is marked (metrics).
    pub meter: &'a dyn Meter<R>,
}

/// Relays batch after batch until `watch.until` (or a stop), waiting
/// `poll` whenever nothing is due.
pub fn relay<N: Notice, R: Registry>(
    queue: &mut dyn Queue<N>,
    sink: &mut dyn Sink<N>,
    limit: usize,
    policy: RelayPolicy,
    watch: Watch<'_, R>,
) -> Result<RelayCounts, RelayError> {
    let Watch {
        until,
        stop,
        progress,
        meter,
    } = watch;
    let poll = Duration::from_millis(100);
    let mut total = RelayCounts::default();
    while !stop.is_raised() {
        let started = Instant::now();
        let counts = relay_batch(queue, sink, limit, policy, progress)?;
        meter.relayed(&counts);
        total.sent += counts.sent;
        total.already_there += counts.already_there;
        total.failed += counts.failed;
        total.parked += counts.parked;
        let idle = counts == RelayCounts::default();
        if idle && until == Until::Done && queue.remaining()? == 0 {
            break;
        }
        if idle {
            std::thread::sleep(poll.saturating_sub(started.elapsed()));
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
