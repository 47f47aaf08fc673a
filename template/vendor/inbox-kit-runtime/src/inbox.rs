//! What the inbox decides for each delivery, whatever the database: what a
//! handler's result (or panic) means, the outcome it reports, when a
//! message that keeps failing is given up on and parked, and what a parked
//! message keeps.
//!
//! The transactional inbox itself (insert `(consumer, message_id)`, apply,
//! commit, all in one transaction) is each database's; these are the
//! decisions every one of them must make the same way, so they live once,
//! here, with their tests.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::handler::{HandlerError, Refused};
use crate::storage::StorageError;

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

/// Milliseconds since the Unix epoch: the unit of every timestamp the inbox
/// stores.
pub fn unix_millis(time: std::time::SystemTime) -> i64 {
    let since_epoch = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}

/// Why a handler did not apply a delivery, when the database is not to
/// blame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It failed (an error, a panic): counted, and retried on redelivery.
    Failed(String),
    /// It refused the message for good ([`Refused`]): dead-lettered at once.
    Refused(String),
}

/// Runs a handler's work (`apply`, one delivery or a set-based run) and
/// says what its result means for the delivery:
///
/// * `Ok(Ok(()))`: it applied.
/// * `Ok(Err(failure))`: it failed or refused; the caller rolls back its
///   savepoint, then counts the attempt against the message or
///   dead-letters it.
/// * `Err(fault)`: the database itself failed (see
///   [`StorageError::is_storage_fault`]); not the message's fault, so the
///   whole batch is abandoned and nothing counts.
///
/// A panic is caught so that it fails only this delivery instead of taking
/// the worker, and the batch's other deliveries, down with it.
pub fn guarded(
    apply: impl FnOnce() -> Result<(), HandlerError>,
) -> Result<Result<(), Failure>, StorageError> {
    settle(catch_unwind(AssertUnwindSafe(apply)))
}

/// What a handler's result (or panic) means for its delivery.
fn settle(
    result: std::thread::Result<Result<(), HandlerError>>,
) -> Result<Result<(), Failure>, StorageError> {
    let error = match result {
        Ok(Ok(())) => return Ok(Ok(())),
        Ok(Err(error)) => error,
        Err(panic) => return Ok(Err(Failure::Failed(panic_message(panic)))),
    };
    let error = match error.downcast::<StorageError>() {
        Ok(storage) if storage.is_storage_fault() => return Err(*storage),
        Ok(storage) => return Ok(Err(Failure::Failed(storage.to_string()))),
        Err(other) => other,
    };
    Ok(Err(match error.downcast::<Refused>() {
        Ok(refused) => Failure::Refused(refused.0),
        Err(other) => Failure::Failed(other.to_string()),
    }))
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("handler panicked: {text}")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

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

    /// Every outcome is counted under a label of its own, and a failure
    /// where a storage error counts the deliveries it rolled back.
    #[test]
    fn each_outcome_has_its_own_label_and_failures_share_one_place() {
        let outcomes = [
            Outcome::Applied,
            Outcome::Duplicate,
            Outcome::Failed("x".into()),
            Outcome::DeadLettered("x".into()),
            Outcome::Refused("x".into()),
        ];
        let labels = outcomes.clone().map(|outcome| outcome.label());
        assert_eq!(labels, Outcome::LABELS);
        let indexes = outcomes.clone().map(|outcome| outcome.index());
        assert_eq!(indexes, [0, 1, 2, 3, 4]);
        assert_eq!(outcomes[FAILED_INDEX], Outcome::Failed("x".into()));
    }

    #[test]
    fn timestamps_are_milliseconds_since_the_epoch_and_never_negative() {
        assert_eq!(unix_millis(UNIX_EPOCH), 0);
        assert_eq!(
            unix_millis(UNIX_EPOCH + Duration::from_millis(1_500)),
            1_500
        );
        assert_eq!(unix_millis(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }

    #[test]
    fn a_panic_is_recorded_with_its_message_whatever_its_payload() {
        assert_eq!(panic_message(Box::new("boom")), "handler panicked: boom");
        assert_eq!(
            panic_message(Box::new(String::from("no account 7"))),
            "handler panicked: no account 7"
        );
        assert_eq!(
            panic_message(Box::new(42_u8)),
            "handler panicked: unknown panic"
        );
    }

    /// Each way a handler ends decides what the inbox does next: commit,
    /// count a failure, dead-letter at once, or abandon the whole batch
    /// without holding anything against the message.
    #[test]
    fn a_handler_s_result_is_sorted_into_applied_failed_refused_or_a_database_fault() {
        use crate::storage::StorageFault;

        assert_eq!(guarded(|| Ok(())).unwrap(), Ok(()));

        let fault =
            guarded(|| Err(StorageError::new(StorageFault::Unavailable, "disk full").into()));
        assert_eq!(fault.unwrap_err().fault(), StorageFault::Unavailable);
        let conflict =
            guarded(|| Err(StorageError::new(StorageFault::Conflict, "deadlock").into()));
        assert_eq!(conflict.unwrap_err().fault(), StorageFault::Conflict);

        let refused_write =
            guarded(|| Err(StorageError::new(StorageFault::Constraint, "check").into()));
        assert_eq!(
            refused_write.unwrap(),
            Err(Failure::Failed("constraint violated: check".into()))
        );

        let refused = guarded(|| Err(Refused::because("above what was paid").into()));
        assert_eq!(
            refused.unwrap(),
            Err(Failure::Refused("above what was paid".into()))
        );

        let failed = guarded(|| Err("account 7 not opened yet".into()));
        assert_eq!(
            failed.unwrap(),
            Err(Failure::Failed("account 7 not opened yet".into()))
        );

        let panicked = guarded(|| panic!("boom"));
        assert_eq!(
            panicked.unwrap(),
            Err(Failure::Failed("handler panicked: boom".into()))
        );
    }
}
