//! The transactional inbox: how one delivery is applied at most once and at
//! least once.
//!
//! Brokers deliver at least once, so the same message arrives again after a
//! network retry, a rebalance or a crash before the acknowledgement. For each
//! delivery the inbox, in ONE transaction:
//!
//! 1. inserts `(consumer, message_id)` into a table whose primary key is
//!    exactly that pair; a primary-key violation means "already processed",
//!    so the delivery is a [`Outcome::Duplicate`] and nothing else happens;
//! 2. runs the handler's business update on the same transaction;
//! 3. commits. If the handler fails, the inbox row is rolled back with the
//!    update, so the broker's redelivery applies the message once.
//!
//! Two tempting shortcuts are wrong, and the tests in `tests/` prove it:
//! checking with a SELECT before acting lets parallel workers all see
//! "new", and recording the id in its own transaction before the update
//! loses the message forever when the update fails.
//!
//! A message that keeps failing is counted and, after a maximum number of
//! attempts, parked as a dead letter (see `poison.rs`), so it never blocks
//! the messages behind it and is never silently lost.
//!
//! [`Inbox`] is the seam between the consumer pipeline and storage:
//! [`SqliteInbox`] implements it today; the test harness plugs known-broken
//! implementations into the same seam to show that the tests catch them.

mod poison;
mod sqlite;

pub use poison::{DeadLetter, dead_letters, failures};
pub use sqlite::{SqliteInbox, is_duplicate_key};

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
    /// message is parked in `dead_letters` (with its payload and this error)
    /// and further redeliveries are duplicates until it is re-driven.
    DeadLettered(String),
}

/// One message for one consumer.
#[derive(Clone, Copy)]
pub struct Delivery<'a> {
    pub handler: &'a dyn Handler,
    pub message: &'a Message,
}

/// The storage could not process a batch: nothing in it was recorded, so
/// none of it may be acknowledged; a redelivery will try again.
#[derive(Debug, thiserror::Error)]
#[error("database error: {0}")]
pub struct StorageError(#[from] pub rusqlite::Error);

/// Something that applies deliveries idempotently (one connection's worth).
pub trait Inbox: Send {
    /// Processes a batch of deliveries in one transaction and returns one
    /// outcome per delivery, in order. Outcomes count (and may be
    /// acknowledged) only when this returns `Ok`: an error means the whole
    /// batch was rolled back.
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError>;

    /// Processes a single delivery in its own transaction.
    fn deliver(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let outcomes = self.deliver_batch(&[Delivery { handler, message }])?;
        Ok(outcomes
            .into_iter()
            .next()
            .expect("one outcome per delivery"))
    }
}
