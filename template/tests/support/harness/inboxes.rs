//! What the scenarios deliver through: an inbox under test (the real one,
//! or a known-broken one), and one with its dead letters for the poison
//! scenario.

use {{crate_name}}::inbox::{DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError};

use crate::support::database::Fixture;

/// An inbox implementation under test: the real one, or a broken one.
pub trait InboxUnderTest: Sync {
    /// A name unique among all inboxes under test (the restart scenario
    /// finds the inbox again by it in its second process).
    fn name(&self) -> String;
    /// Changes a fresh database before use, for implementations that need
    /// a schema of their own. The real schema is already in place.
    fn prepare(&self, _fixture: &Fixture) {}
    /// A new connection for one worker.
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox>;
}

/// The inbox this crate ships, delivering `batch_size` messages per
/// transaction and dead-lettering a message after `max_attempts` failures.
pub struct RealInbox {
    pub batch_size: usize,
    pub max_attempts: u32,
}

impl RealInbox {
    pub const ONE_PER_TRANSACTION: Self = Self {
        batch_size: 1,
        max_attempts: 5,
    };
    pub const BATCHED: Self = Self {
        batch_size: 16,
        max_attempts: 5,
    };
    /// Both ways of running the real inbox; the required tests use each.
    pub const ALL: [Self; 2] = [Self::ONE_PER_TRANSACTION, Self::BATCHED];
}

impl InboxUnderTest for RealInbox {
    fn name(&self) -> String {
        format!(
            "real inbox, batches of {}, {} attempts",
            self.batch_size, self.max_attempts
        )
    }

    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        let policy = Policy {
            max_attempts: self.max_attempts,
        };
        Box::new(Batching {
            inner: fixture.inbox(policy),
            batch_size: self.batch_size,
        })
    }
}

/// Splits whatever it is given into transactions of `batch_size`.
struct Batching {
    inner: Box<dyn Inbox>,
    batch_size: usize,
}

impl Inbox for Batching {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(self.batch_size) {
            outcomes.extend(self.inner.deliver_batch(chunk)?);
        }
        Ok(outcomes)
    }
}

/// An inbox together with its dead letters (what the real inbox is).
pub trait InboxWithLetters: Inbox + DeadLetters {}

impl<T: Inbox + DeadLetters + ?Sized> InboxWithLetters for T {}

/// An inbox and its dead letters under test, for the poison scenario: the
/// real one, or a broken one.
pub trait DeadLettersUnderTest: Sync {
    fn name(&self) -> String;
    /// A new connection, dead-lettering by `policy`.
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters>;
}

/// The inbox this crate ships, dead letters and all.
pub struct RealDeadLetters;

impl DeadLettersUnderTest for RealDeadLetters {
    fn name(&self) -> String {
        "real inbox".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters> {
        fixture.inbox(policy)
    }
}
