//! What the scenarios deliver through: an inbox under test (the real one,
//! or a known-broken one), and one with its dead letters for the poison
//! scenario.

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, SetBased, Subscriber};
use {{crate_name}}::handlers::{BorrowedHandler, Handlers, Tables};
use {{crate_name}}::inbox::{
    DeadLetter, DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError,
};
use {{crate_name}}::message::Message;

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
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>>;
}

/// The inbox this crate ships, delivering `batch_size` messages per
/// transaction and dead-lettering a message after `max_attempts` failures,
/// its handlers' set-based paths taken or failing on purpose.
pub struct RealInbox {
    pub batch_size: usize,
    pub max_attempts: u32,
    pub path: Path,
}

/// Which way the real inbox applies deliveries of a handler that has a
/// set-based path (see `SetBased`): the required tests take each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// As it ships: the set-based path, one delivery at a time only where
    /// that fails.
    SetBased,
    /// Every set-based attempt does all its writes and then fails, so the
    /// inbox must roll them back and apply each delivery alone: the
    /// fallback, with something to roll back.
    Fallback,
}

impl RealInbox {
    pub const ONE_PER_TRANSACTION: Self = Self {
        batch_size: 1,
        max_attempts: 5,
        path: Path::SetBased,
    };
    pub const BATCHED: Self = Self {
        batch_size: 16,
        max_attempts: 5,
        path: Path::SetBased,
    };
    /// The real inbox, one and sixteen deliveries per transaction, on both
    /// paths; the required tests use each.
    pub const ALL: [Self; 4] = [
        Self::ONE_PER_TRANSACTION,
        Self::BATCHED,
        Self::ONE_PER_TRANSACTION.falling_back(),
        Self::BATCHED.falling_back(),
    ];

    /// The same, with every set-based attempt failing.
    pub const fn falling_back(self) -> Self {
        Self {
            path: Path::Fallback,
            ..self
        }
    }
}

impl InboxUnderTest for RealInbox {
    fn name(&self) -> String {
        format!(
            "real inbox, batches of {}, {} attempts, {:?} path",
            self.batch_size, self.max_attempts, self.path
        )
    }

    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        let policy = Policy {
            max_attempts: self.max_attempts,
        };
        Box::new(Batching {
            inner: OnPath {
                inner: fixture.inbox(policy),
                path: self.path,
            },
            batch_size: self.batch_size,
        })
    }
}

/// Splits whatever it is given into transactions of `batch_size`.
struct Batching<I> {
    inner: I,
    batch_size: usize,
}

impl<I: Inbox<Handlers>> Inbox<Handlers> for Batching<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(self.batch_size) {
            outcomes.extend(self.inner.deliver_batch(chunk)?);
        }
        Ok(outcomes)
    }
}

/// An inbox whose deliveries take `path`.
pub struct OnPath<I: ?Sized> {
    pub inner: Box<I>,
    pub path: Path,
}

impl<I: InboxWithLetters + ?Sized> Inbox<Handlers> for OnPath<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        if self.path == Path::SetBased {
            return self.inner.deliver_batch(batch);
        }
        let failing: Vec<FailsSetBased<'_>> =
            batch.iter().map(|d| FailsSetBased(d.handler)).collect();
        let deliveries: Vec<Delivery<'_>> = batch
            .iter()
            .zip(&failing)
            .map(|(delivery, handler)| Delivery {
                handler,
                ..*delivery
            })
            .collect();
        self.inner.deliver_batch(&deliveries)
    }
}

impl<I: InboxWithLetters + ?Sized> DeadLetters<Handlers> for OnPath<I> {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.inner.dead_letters()
    }

    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.inner.failures(consumer, message_id)
    }

    fn redrive(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        match self.path {
            Path::SetBased => self.inner.redrive(handler, message),
            Path::Fallback => self.inner.redrive(&FailsSetBased(handler), message),
        }
    }
}

/// A handler whose set-based path (if it has one) writes everything and
/// then fails.
struct FailsSetBased<'a>(&'a BorrowedHandler<'a>);

impl Subscriber<Event> for FailsSetBased<'_> {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        self.0.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for FailsSetBased<'_> {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        self.0.apply(tables, message)
    }

    fn set_based(&self) -> Option<&dyn SetBased<Event, dyn Tables + 't>> {
        self.0
            .set_based()
            .map(|_| self as &dyn SetBased<Event, dyn Tables + 't>)
    }
}

impl<'t> SetBased<Event, dyn Tables + 't> for FailsSetBased<'_> {
    fn apply_all(
        &self,
        tables: &mut (dyn Tables + 't),
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        let real = self.0.set_based().expect("only asked when it has one");
        real.apply_all(tables, messages)?;
        Err("the set-based attempt fails on purpose, after its writes".into())
    }
}

/// An inbox together with its dead letters (what the real inbox is).
pub trait InboxWithLetters: Inbox<Handlers> + DeadLetters<Handlers> {}

impl<T: Inbox<Handlers> + DeadLetters<Handlers> + ?Sized> InboxWithLetters for T {}

/// An inbox and its dead letters under test, for the poison scenario: the
/// real one, or a broken one.
pub trait DeadLettersUnderTest: Sync {
    fn name(&self) -> String;
    /// A new connection, dead-lettering by `policy`.
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters>;
}

/// The inbox this crate ships, dead letters and all, on `0`'s path.
pub struct RealDeadLetters(pub Path);

impl RealDeadLetters {
    /// Both paths; the required tests use each.
    pub const ALL: [Self; 2] = [Self(Path::SetBased), Self(Path::Fallback)];
}

impl DeadLettersUnderTest for RealDeadLetters {
    fn name(&self) -> String {
        format!("real inbox, {:?} path", self.0)
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters> {
        Box::new(OnPath {
            inner: fixture.inbox(policy),
            path: self.0,
        })
    }
}
