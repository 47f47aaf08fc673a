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
//! `database.rs`) says how. The test harness plugs known-broken implementations
//! into the same seam to show that the tests catch them.

mod apply;
mod steps;

pub use apply::{run_handler, run_set_based};
pub use inbox_kit_runtime::inbox::{
    DeadLetter, FAILED_INDEX, Failure, Outcome, Policy, unix_millis,
};
pub use inbox_kit_runtime::storage::{StorageError, StorageFault};
pub use steps::{Step, steps};

use crate::handlers::BorrowedHandler;
use crate::message::Message;

/// One message for one consumer.
#[derive(Clone, Copy)]
pub struct Delivery<'a> {
    pub handler: &'a BorrowedHandler<'a>,
    pub message: &'a Message,
    /// How many times the source has delivered the message, this time
    /// included (1 when the source does not count).
    pub delivered: u32,
}

impl<'a> Delivery<'a> {
    /// A first delivery of `message` to `handler`.
    pub fn new(handler: &'a BorrowedHandler<'a>, message: &'a Message) -> Self {
        Self {
            handler,
            message,
            delivered: 1,
        }
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
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let outcomes = self.deliver_batch(&[Delivery::new(handler, message)])?;
        Ok(outcomes
            .into_iter()
            .next()
            .expect("one outcome per delivery"))
    }
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
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError>;
}
