//! Mistakes with dead letters and redrive. Each is the real inbox with one
//! step changed, so that the poison scenario sees exactly that step.

use {{crate_name}}::handler::Handler;
use {{crate_name}}::inbox::{
    DeadLetter, DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError,
};
use {{crate_name}}::message::Message;

use super::AttemptsCountedInside;
use crate::support::database::Fixture;
use crate::support::harness::{DeadLettersUnderTest, InboxUnderTest, InboxWithLetters};
use crate::support::raw::Raw;

/// Every dead-letter mistake here, for tests that run them all.
pub fn all_letters() -> Vec<Box<dyn DeadLettersUnderTest>> {
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
    inner: Box<dyn InboxWithLetters>,
    raw: Box<dyn Raw>,
}

impl Inbox for ForgetsInboxRow {
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

impl DeadLetters for ForgetsInboxRow {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.inner.dead_letters()
    }
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.inner.failures(consumer, message_id)
    }
    fn redrive(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        self.inner.redrive(handler, message)
    }
}

impl DeadLettersUnderTest for DeadLetterWithoutInboxRow {
    fn name(&self) -> String {
        "dead letters without their inbox row".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters> {
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
    inner: Box<dyn InboxWithLetters>,
    raw: Box<dyn Raw>,
}

impl Inbox for DropsOnRedrive {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.inner.deliver_batch(batch)
    }
}

impl DeadLetters for DropsOnRedrive {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.inner.dead_letters()
    }
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.inner.failures(consumer, message_id)
    }
    fn redrive(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let outcome = self.inner.redrive(handler, message)?;
        self.raw
            .delete_dead_letter(handler.consumer(), message.id.as_str())?;
        Ok(outcome)
    }
}

impl DeadLettersUnderTest for RedriveDropsTheLetter {
    fn name(&self) -> String {
        "redrive that drops the dead letter".into()
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters> {
        Box::new(DropsOnRedrive {
            inner: fixture.inbox(policy),
            raw: fixture.raw(),
        })
    }
}

/// A broken inbox with the real dead letters beside it, for mistakes made
/// in delivering (the dead letters it writes, if any, are its own).
struct WithRealLetters {
    inbox: Box<dyn Inbox>,
    letters: Box<dyn InboxWithLetters>,
}

impl Inbox for WithRealLetters {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.inbox.deliver_batch(batch)
    }
}

impl DeadLetters for WithRealLetters {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.letters.dead_letters()
    }
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.letters.failures(consumer, message_id)
    }
    fn redrive(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        self.letters.redrive(handler, message)
    }
}

/// Counts its failures inside the transaction the failure rolls back (see
/// its definition): the poison message is never dead-lettered. Caught at
/// the dead letter that never comes.
impl DeadLettersUnderTest for AttemptsCountedInside {
    fn name(&self) -> String {
        InboxUnderTest::name(self)
    }
    fn open(&self, fixture: &Fixture, policy: Policy) -> Box<dyn InboxWithLetters> {
        Box::new(WithRealLetters {
            inbox: InboxUnderTest::open(self, fixture),
            letters: fixture.inbox(policy),
        })
    }
}
