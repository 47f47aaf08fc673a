//! Mistakes with dead letters and redrive. Each is the real inbox with one
//! step changed, so that the poison scenario sees exactly that step.

use {{crate_name}}::handlers::{BorrowedHandler, Handlers};
use {{crate_name}}::inbox::{
    DeadLetter, DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError,
};
use {{crate_name}}::message::Message;

use super::AttemptsCountedInside;
use crate::support::database::Fixture;
use crate::support::harness::Raw;
use crate::support::harness::{
    DeadLettersUnderTest, InboxUnderTest, InboxWithLetters, ThisProject,
};

/// Every dead-letter mistake here, for tests that run them all.
pub fn all_letters() -> Vec<Box<dyn DeadLettersUnderTest<ThisProject>>> {
    vec![
        Box::new(DeadLetterWithoutInboxRow),
        Box::new(RedriveDropsTheLetter),
        Box::new(AttemptsCountedInside),
    ]
}

/// Parks a poison message without writing its inbox row: each redelivery
/// runs the handler again, fails again, and counts again (or, once the
/// failure heals, applies a message an operator may already have dealt
/// with by hand). Caught by the redelivery after the dead letter, which
/// must be a duplicate.
pub struct DeadLetterWithoutInboxRow;

struct ForgetsInboxRow {
    inner: Box<dyn InboxWithLetters<Handlers>>,
    raw: Box<dyn Raw<ThisProject>>,
}

impl Inbox<Handlers> for ForgetsInboxRow {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let outcomes = self.inner.deliver_batch(batch)?;
        for (delivery, outcome) in batch.iter().zip(&outcomes) {
            if matches!(outcome, Outcome::DeadLettered(_)) {
                self.raw
                    .delete_inbox_row(delivery.handler.consumer(), delivery.message.id.as_str())?;
            }
        }
        Ok(outcomes)
    }
}

impl DeadLetters<Handlers> for ForgetsInboxRow {
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
        self.inner.redrive(handler, message)
    }
}

impl DeadLettersUnderTest<ThisProject> for DeadLetterWithoutInboxRow {
    fn name(&self) -> String {
        "dead letters without their inbox row".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        Box::new(ForgetsInboxRow {
            inner: fixture.inbox(policy),
            raw: fixture.raw(),
        })
    }
}

/// A redrive that deletes the dead letter whatever happened, as if
/// "redriven" meant "done": when the message fails again, it is gone, in
/// neither the inbox nor the dead letters. Caught by the redrive that
/// fails again, which must leave the dead letter as it was.
pub struct RedriveDropsTheLetter;

struct DropsOnRedrive {
    inner: Box<dyn InboxWithLetters<Handlers>>,
    raw: Box<dyn Raw<ThisProject>>,
}

impl Inbox<Handlers> for DropsOnRedrive {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.inner.deliver_batch(batch)
    }
}

impl DeadLetters<Handlers> for DropsOnRedrive {
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
        let outcome = self.inner.redrive(handler, message)?;
        self.raw
            .delete_dead_letter(handler.consumer(), message.id.as_str())?;
        Ok(outcome)
    }
}

impl DeadLettersUnderTest<ThisProject> for RedriveDropsTheLetter {
    fn name(&self) -> String {
        "redrive that drops the dead letter".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        Box::new(DropsOnRedrive {
            inner: fixture.inbox(policy),
            raw: fixture.raw(),
        })
    }
}

/// The real inbox, told a different delivery count than the source gave.
struct RecountsDeliveries {
    inner: Box<dyn InboxWithLetters<Handlers>>,
    recount: fn(u32) -> u32,
}

impl Inbox<Handlers> for RecountsDeliveries {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let recounted: Vec<Delivery<'_>> = batch
            .iter()
            .map(|d| Delivery {
                delivered: (self.recount)(d.delivered),
                ..Delivery::new(d.handler, d.message)
            })
            .collect();
        self.inner.deliver_batch(&recounted)
    }
}

fn recounting(
    fixture: &Fixture,
    policy: Policy,
    recount: fn(u32) -> u32,
) -> Box<dyn InboxWithLetters<Handlers>> {
    Box::new(WithRealLetters {
        inbox: Box::new(RecountsDeliveries {
            inner: fixture.inbox(policy),
            recount,
        }),
        letters: fixture.inbox(policy),
    })
}

/// Every mistake with the source's delivery count, for tests that run them
/// all.
pub fn delivery_count_mistakes() -> Vec<Box<dyn DeadLettersUnderTest<ThisProject>>> {
    vec![Box::new(IgnoresDeliveryCount), Box::new(ParksOneEarly)]
}

/// Never looks at how often the source delivered a message, only at the
/// failures it counted itself: a message that kills the process before any
/// outcome runs, and kills it, forever. Caught by the crash loop's deadly
/// message, which must be parked unrun.
pub struct IgnoresDeliveryCount;

impl DeadLettersUnderTest<ThisProject> for IgnoresDeliveryCount {
    fn name(&self) -> String {
        "the source's delivery count ignored".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        recounting(fixture, policy, |_| 1)
    }
}

/// Parks a message at its `max_attempts`-th delivery instead of after it
/// (an off-by-one on the same count): the last chance is never given, and a
/// message that would have applied becomes a dead letter. Caught by the
/// crash loop's survivor, which must apply.
pub struct ParksOneEarly;

impl DeadLettersUnderTest<ThisProject> for ParksOneEarly {
    fn name(&self) -> String {
        "parked one delivery early".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        recounting(fixture, policy, |delivered| delivered + 1)
    }
}

/// A broken inbox with the real dead letters beside it, for mistakes made
/// in delivering (the dead letters it writes, if any, are its own).
struct WithRealLetters {
    inbox: Box<dyn Inbox<Handlers>>,
    letters: Box<dyn InboxWithLetters<Handlers>>,
}

impl Inbox<Handlers> for WithRealLetters {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.inbox.deliver_batch(batch)
    }
}

impl DeadLetters<Handlers> for WithRealLetters {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.letters.dead_letters()
    }
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.letters.failures(consumer, message_id)
    }
    fn redrive(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        self.letters.redrive(handler, message)
    }
}

/// Counts its failures inside the transaction the failure rolls back (see
/// its definition): the poison message is never dead-lettered. Caught at
/// the dead letter that never comes.
impl DeadLettersUnderTest<ThisProject> for AttemptsCountedInside {
    fn name(&self) -> String {
        InboxUnderTest::name(self)
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        Box::new(WithRealLetters {
            inbox: InboxUnderTest::open(self, fixture),
            letters: fixture.inbox(policy),
        })
    }
}
