//! What the scenarios deliver through: an inbox under test (the real one,
//! or a known-broken one), and one with its dead letters for the poison
//! scenarios.
//!
//! The real inbox is taken every way it can apply a batch: one delivery
//! per transaction or sixteen, and, for a handler with a set-based path,
//! on that path or on the fallback it takes when the path fails (every
//! set-based attempt then writes everything and fails, so the inbox must
//! roll it all back and apply each delivery alone).

use inbox_kit_runtime::delivery::{DeadLetters, Delivery, Inbox};
use inbox_kit_runtime::handler::{Handler, HandlerError, SetBased, Subscriber};
use inbox_kit_runtime::inbox::{DeadLetter, Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

use super::project::{Fixture, HandlerOf, LettersOf, Project};

/// An inbox implementation under test: the real one, or a broken one.
pub trait InboxUnderTest<P: Project>: Sync {
    /// A name unique among all inboxes under test (the restart scenario
    /// finds the inbox again by it in its second process).
    fn name(&self) -> String;
    /// Changes a fresh database before use, for implementations that need
    /// a schema of their own. The real schema is already in place.
    fn prepare(&self, _fixture: &P::Fixture) {}
    /// A new connection for one worker.
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>>;
}

/// The inbox the project ships, delivering `batch_size` messages per
/// transaction and dead-lettering a message after `max_attempts` failures,
/// its handlers' set-based paths taken or failing on purpose.
#[derive(Clone, Copy, Debug)]
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

    /// A new connection for one worker, on a fixture of whichever project
    /// (what [`InboxUnderTest::open`] does, without naming the project).
    pub fn open<P: Project>(&self, fixture: &impl Fixture<P>) -> Box<dyn Inbox<P::Registry>> {
        let policy = Policy {
            max_attempts: self.max_attempts,
        };
        Box::new(Batching {
            inner: OnPath::<P> {
                inner: fixture.inbox(policy),
                path: self.path,
            },
            batch_size: self.batch_size,
        })
    }
}

impl<P: Project> InboxUnderTest<P> for RealInbox {
    fn name(&self) -> String {
        format!(
            "real inbox, batches of {}, {} attempts, {:?} path",
            self.batch_size, self.max_attempts, self.path
        )
    }

    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        RealInbox::open(self, fixture)
    }
}

/// Splits whatever it is given into transactions of `batch_size`.
struct Batching<I> {
    inner: I,
    batch_size: usize,
}

impl<R: inbox_kit_runtime::handler::Registry, I: Inbox<R>> Inbox<R> for Batching<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(self.batch_size) {
            outcomes.extend(self.inner.deliver_batch(chunk)?);
        }
        Ok(outcomes)
    }
}

/// An inbox of project `P` whose deliveries take `path`.
pub struct OnPath<P: Project> {
    pub inner: LettersOf<P>,
    pub path: Path,
}

impl<P: Project> Inbox<P::Registry> for OnPath<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        if self.path == Path::SetBased {
            return self.inner.deliver_batch(batch);
        }
        let failing: Vec<FailsSetBased<'_, P>> =
            batch.iter().map(|d| FailsSetBased(d.handler)).collect();
        let deliveries: Vec<Delivery<'_, P::Registry>> = batch
            .iter()
            .zip(&failing)
            .map(|(delivery, handler)| Delivery {
                handler: handler as &HandlerOf<'_, P>,
                ..*delivery
            })
            .collect();
        self.inner.deliver_batch(&deliveries)
    }
}

impl<P: Project> DeadLetters<P::Registry> for OnPath<P> {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.inner.dead_letters()
    }

    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.inner.failures(consumer, message_id)
    }

    fn redrive<'a>(
        &mut self,
        handler: &'a HandlerOf<'a, P>,
        message: &'a Message<P::Event>,
    ) -> Result<Outcome, StorageError> {
        match self.path {
            Path::SetBased => self.inner.redrive(handler, message),
            Path::Fallback => {
                let failing = FailsSetBased::<P>(handler);
                self.inner.redrive(&failing as &HandlerOf<'_, P>, message)
            }
        }
    }
}

/// A handler whose set-based path (if it has one) writes everything and
/// then fails.
struct FailsSetBased<'a, P: Project>(&'a HandlerOf<'a, P>);

impl<P: Project> Subscriber<P::Event> for FailsSetBased<'_, P> {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }

    fn subscribes_to(&self, event: &P::Event) -> bool {
        self.0.subscribes_to(event)
    }
}

impl<'t, P: Project> Handler<P::Event, P::Tables<'t>> for FailsSetBased<'_, P> {
    fn apply(
        &self,
        tables: &mut P::Tables<'t>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError> {
        self.0.apply(tables, message)
    }

    fn set_based(&self) -> Option<&dyn SetBased<P::Event, P::Tables<'t>>> {
        self.0
            .set_based()
            .map(|_| self as &dyn SetBased<P::Event, P::Tables<'t>>)
    }
}

impl<'t, P: Project> SetBased<P::Event, P::Tables<'t>> for FailsSetBased<'_, P> {
    fn apply_all(
        &self,
        tables: &mut P::Tables<'t>,
        messages: &[&Message<P::Event>],
    ) -> Result<(), HandlerError> {
        let real = self.0.set_based().expect("only asked when it has one");
        real.apply_all(tables, messages)?;
        Err("the set-based attempt fails on purpose, after its writes".into())
    }
}

/// An inbox and its dead letters under test, for the poison scenarios: the
/// real one, or a broken one.
pub trait DeadLettersUnderTest<P: Project>: Sync {
    fn name(&self) -> String;
    /// A new connection, dead-lettering by `policy`.
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P>;
}

/// The inbox the project ships, dead letters and all, on `0`'s path.
#[derive(Clone, Copy, Debug)]
pub struct RealDeadLetters(pub Path);

impl RealDeadLetters {
    /// Both paths; the required tests use each.
    pub const ALL: [Self; 2] = [Self(Path::SetBased), Self(Path::Fallback)];
}

impl<P: Project> DeadLettersUnderTest<P> for RealDeadLetters {
    fn name(&self) -> String {
        format!("real inbox, {:?} path", self.0)
    }
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P> {
        Box::new(OnPath::<P> {
            inner: fixture.inbox(policy),
            path: self.0,
        })
    }
}
