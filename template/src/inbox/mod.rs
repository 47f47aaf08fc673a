//! The transactional inbox: how one delivery is applied at most once and at
//! least once.
//!
//! Brokers deliver at least once, so the same message arrives again after a
//! network retry, a rebalance or a crash before the acknowledgement. For each
//! delivery the inbox, in ONE transaction:
//!
//! 1. inserts `(consumer, message_id)` into a table whose primary key is
//!    exactly that pair; finding the pair already there means "already
//!    processed", so the delivery is a [`Outcome::Duplicate`] and nothing
//!    else happens;
//! 2. runs the handler's business update on the same transaction;
//! 3. commits. If the handler fails, the inbox row is rolled back with the
//!    update, so the broker's redelivery applies the message once.
//!
//! Two tempting shortcuts are wrong, and the tests in `tests/` prove it:
//! checking with a SELECT before acting lets parallel workers all see
//! "new", and recording the id in its own transaction before the update
//! loses the message forever when the update fails.
//!
//! A message that keeps failing is counted and, after
//! [`Policy::max_attempts`], parked as a dead letter (see [`DeadLetters`]),
//! so it never blocks the messages behind it and is never silently lost.
//!
//! This module is the seam between the consumer and its database: it says
//! what an inbox does, and the database module of this project (see
//! `lib.rs`) says how. The test harness plugs known-broken implementations
//! into the same seam to show that the tests catch them.

mod apply;
mod steps;

pub use apply::{Failure, run_handler, run_set_based};
pub use inbox_kit_runtime::storage::{StorageError, StorageFault};
pub use steps::{Step, steps};

use crate::handler::Handler;
use crate::message::Message;

/// What happened to one delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The business update ran and is committed together with the inbox row.
    Applied,
    /// This consumer already processed this message id; nothing changed.
    /// Duplicates are the normal path of at-least-once delivery, not errors.
    Duplicate,
    /// The handler failed; everything it did was rolled back, inbox row
    /// included, so a redelivery will try again.
    Failed(String),
    /// The handler failed for the configured maximum number of attempts: the
    /// message is parked as a dead letter (with its payload and this error)
    /// and further redeliveries are duplicates until it is re-driven.
    DeadLettered(String),
    /// The handler refused the message for good (a rule it breaks, an
    /// entity that does not exist: see [`crate::handler::Refused`]): its
    /// writes rolled back, it is dead-lettered at once with this reason,
    /// never retried, and further redeliveries are duplicates.
    Refused(String),
}

/// Where a failed delivery is in [`Outcome::LABELS`]: every delivery of
/// a batch rolled back by a storage error counts there too.
pub const FAILED_INDEX: usize = 2;

impl Outcome {
    /// Every outcome's name where it is counted and traced (the summary
    /// line, the metrics' `outcome` label, the `deliver` span's `outcome`
    /// field), in the order [`Outcome::index`] numbers them.
    pub const LABELS: [&'static str; 5] =
        ["applied", "duplicate", "failed", "dead_lettered", "refused"];

    /// Its place in [`Outcome::LABELS`].
    pub fn index(&self) -> usize {
        match self {
            Self::Applied => 0,
            Self::Duplicate => 1,
            Self::Failed(_) => FAILED_INDEX,
            Self::DeadLettered(_) => 3,
            Self::Refused(_) => 4,
        }
    }

    /// Its name (see [`Outcome::LABELS`]).
    pub fn label(&self) -> &'static str {
        Self::LABELS[self.index()]
    }
}

/// One message for one consumer.
#[derive(Clone, Copy)]
pub struct Delivery<'a> {
    pub handler: &'a dyn Handler,
    pub message: &'a Message,
    /// How many times the source has delivered the message, this time
    /// included (1 when the source does not count).
    pub delivered: u32,
}

impl<'a> Delivery<'a> {
    /// A first delivery of `message` to `handler`.
    pub fn new(handler: &'a dyn Handler, message: &'a Message) -> Self {
        Self {
            handler,
            message,
            delivered: 1,
        }
    }
}

/// How the inbox treats messages that keep failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Failed attempts after which a message is dead-lettered.
    pub max_attempts: u32,
}

impl Default for Policy {
    fn default() -> Self {
        Self { max_attempts: 5 }
    }
}

impl Policy {
    /// Whether a delivery that just failed for the `failures`-th counted
    /// time, delivered `delivered` times by its source, is the last chance.
    pub fn exhausted(self, failures: u32, delivered: u32) -> bool {
        failures.max(delivered) >= self.max_attempts
    }

    /// Whether the source has delivered a message more often than attempts
    /// allow without the inbox ever counting a failure: the consumer died
    /// while handling it (a crash, an abort), again and again. Such a
    /// message is parked without running its handler once more.
    pub fn gave_up_on(self, delivered: u32) -> bool {
        delivered > self.max_attempts
    }
}

/// Something that applies deliveries idempotently (one connection's worth).
pub trait Inbox: Send {
    /// Processes a batch of deliveries in one transaction and returns one
    /// outcome per delivery, in order. Outcomes count (and may be
    /// acknowledged) only when this returns `Ok`: an error means the whole
    /// batch was rolled back, or may have been, and nothing of it counts.
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError>;

    /// Processes a single delivery in its own transaction.
    fn deliver(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let outcomes = self.deliver_batch(&[Delivery::new(handler, message)])?;
        Ok(outcomes
            .into_iter()
            .next()
            .expect("one outcome per delivery"))
    }
}

/// A message parked after too many failures, or refused by its handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub consumer: String,
    pub message_id: String,
    pub event_type: String,
    pub payload: String,
    pub error: String,
    pub attempts: u32,
    /// Refused by its handler (never retried), rather than failed
    /// `attempts` times.
    pub refused: bool,
    /// Milliseconds since the Unix epoch.
    pub dead_at: i64,
}

/// Failure counts and dead letters, kept next to the inbox.
pub trait DeadLetters {
    /// Every dead letter, oldest first.
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError>;

    /// Failures counted so far for one delivery (0 if none).
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError>;

    /// Gives a dead letter another chance, in one transaction: forget its
    /// inbox row and attempt count, deliver it again, and delete the dead
    /// letter only if it applied. If it fails or is refused again,
    /// everything is rolled back and the dead letter stays as it was.
    fn redrive(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError>;
}

/// Milliseconds since the Unix epoch: the unit of every timestamp the inbox
/// stores.
pub fn unix_millis(time: std::time::SystemTime) -> i64 {
    let since_epoch = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::Policy;

    const THREE: Policy = Policy { max_attempts: 3 };

    #[test]
    fn a_failure_is_the_last_chance_at_max_attempts_counted_or_delivered() {
        assert!(!THREE.exhausted(2, 1));
        assert!(THREE.exhausted(3, 1), "three failures counted");
        assert!(!THREE.exhausted(1, 2));
        assert!(THREE.exhausted(1, 3), "delivered three times");
        assert!(THREE.exhausted(4, 4));
    }

    #[test]
    fn a_source_gives_up_only_after_max_attempts_deliveries() {
        assert!(!THREE.gave_up_on(1));
        assert!(!THREE.gave_up_on(3), "the third delivery is still a chance");
        assert!(THREE.gave_up_on(4));
    }
}
