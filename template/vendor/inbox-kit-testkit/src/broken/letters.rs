//! Mistakes with dead letters and redrive. Each is the real inbox with one
//! step changed, so that the poison scenario sees exactly that step.

use inbox_kit_runtime::delivery::{DeadLetters, Delivery, Inbox};
use inbox_kit_runtime::inbox::{DeadLetter, Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

use crate::harness::{
    DeadLettersUnderTest, Fixture, HandlerOf, InboxUnderTest, LettersOf, Project, Raw,
};

use super::AttemptsCountedInside;

/// Every dead-letter mistake here, for tests that run them all.
pub fn all_letters<P: Project>() -> Vec<Box<dyn DeadLettersUnderTest<P>>> {
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

struct ForgetsInboxRow<P: Project> {
    inner: LettersOf<P>,
    raw: Box<dyn Raw<P>>,
}

impl<P: Project> Inbox<P::Registry> for ForgetsInboxRow<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
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

impl<P: Project> DeadLetters<P::Registry> for ForgetsInboxRow<P> {
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
        self.inner.redrive(handler, message)
    }
}

impl<P: Project> DeadLettersUnderTest<P> for DeadLetterWithoutInboxRow {
    fn name(&self) -> String {
        "dead letters without their inbox row".into()
    }
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P> {
        Box::new(ForgetsInboxRow::<P> {
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

struct DropsOnRedrive<P: Project> {
    inner: LettersOf<P>,
    raw: Box<dyn Raw<P>>,
}

impl<P: Project> Inbox<P::Registry> for DropsOnRedrive<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        self.inner.deliver_batch(batch)
    }
}

impl<P: Project> DeadLetters<P::Registry> for DropsOnRedrive<P> {
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
        let outcome = self.inner.redrive(handler, message)?;
        self.raw
            .delete_dead_letter(handler.consumer(), message.id.as_str())?;
        Ok(outcome)
    }
}

impl<P: Project> DeadLettersUnderTest<P> for RedriveDropsTheLetter {
    fn name(&self) -> String {
        "redrive that drops the dead letter".into()
    }
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P> {
        Box::new(DropsOnRedrive::<P> {
            inner: fixture.inbox(policy),
            raw: fixture.raw(),
        })
    }
}

/// The real inbox, told a different delivery count than the source gave.
struct RecountsDeliveries<P: Project> {
    inner: LettersOf<P>,
    recount: fn(u32) -> u32,
}

impl<P: Project> Inbox<P::Registry> for RecountsDeliveries<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        let recounted: Vec<Delivery<'_, P::Registry>> = batch
            .iter()
            .map(|d| Delivery {
                delivered: (self.recount)(d.delivered),
                ..Delivery::new(d.handler, d.message)
            })
            .collect();
        self.inner.deliver_batch(&recounted)
    }
}

fn recounting<P: Project>(
    fixture: &P::Fixture,
    policy: Policy,
    recount: fn(u32) -> u32,
) -> LettersOf<P> {
    Box::new(WithRealLetters::<P> {
        inbox: Box::new(RecountsDeliveries::<P> {
            inner: fixture.inbox(policy),
            recount,
        }),
        letters: fixture.inbox(policy),
    })
}

/// Every mistake with the source's delivery count, for tests that run them
/// all.
pub fn delivery_count_mistakes<P: Project>() -> Vec<Box<dyn DeadLettersUnderTest<P>>> {
    vec![Box::new(IgnoresDeliveryCount), Box::new(ParksOneEarly)]
}

/// Never looks at how often the source delivered a message, only at the
/// failures it counted itself: a message that kills the process before any
/// outcome runs, and kills it, forever. Caught by the crash loop's deadly
/// message, which must be parked unrun.
pub struct IgnoresDeliveryCount;

impl<P: Project> DeadLettersUnderTest<P> for IgnoresDeliveryCount {
    fn name(&self) -> String {
        "the source's delivery count ignored".into()
    }
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P> {
        recounting::<P>(fixture, policy, |_| 1)
    }
}

/// Parks a message at its `max_attempts`-th delivery instead of after it
/// (an off-by-one on the same count): the last chance is never given, and a
/// message that would have applied becomes a dead letter. Caught by the
/// crash loop's survivor, which must apply.
pub struct ParksOneEarly;

impl<P: Project> DeadLettersUnderTest<P> for ParksOneEarly {
    fn name(&self) -> String {
        "parked one delivery early".into()
    }
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P> {
        recounting::<P>(fixture, policy, |delivered| delivered + 1)
    }
}

/// A broken inbox with the real dead letters beside it, for mistakes made
/// in delivering (the dead letters it writes, if any, are its own).
struct WithRealLetters<P: Project> {
    inbox: Box<dyn Inbox<P::Registry>>,
    letters: LettersOf<P>,
}

impl<P: Project> Inbox<P::Registry> for WithRealLetters<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        self.inbox.deliver_batch(batch)
    }
}

impl<P: Project> DeadLetters<P::Registry> for WithRealLetters<P> {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.letters.dead_letters()
    }
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.letters.failures(consumer, message_id)
    }
    fn redrive<'a>(
        &mut self,
        handler: &'a HandlerOf<'a, P>,
        message: &'a Message<P::Event>,
    ) -> Result<Outcome, StorageError> {
        self.letters.redrive(handler, message)
    }
}

/// Counts its failures inside the transaction the failure rolls back (see
/// its definition): the poison message is never dead-lettered. Caught at
/// the dead letter that never comes.
impl<P: Project> DeadLettersUnderTest<P> for AttemptsCountedInside {
    fn name(&self) -> String {
        InboxUnderTest::<P>::name(self)
    }
    fn open(&self, fixture: &P::Fixture, policy: Policy) -> LettersOf<P> {
        Box::new(WithRealLetters::<P> {
            inbox: InboxUnderTest::<P>::open(self, fixture),
            letters: fixture.inbox(policy),
        })
    }
}
