//! Mistakes with the database's faults: held against the message as a
//! failure, taken as final, or taken as a duplicate. A deadlock, a lock or
//! statement timeout, a lost connection or a full disk is not the
//! message's fault; it must fail the batch and nothing else.

use std::time::Duration;

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::envelope::Wire;
use inbox_kit_runtime::inbox::{DeadLetter, Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

use super::one_at_a_time;
use crate::harness::env::now_millis;
use crate::harness::scenarios::ImpatientUnderTest;
use crate::harness::{Fixture, HandlerOf, InboxUnderTest, Project, Raw, RealInbox, Tripwires};

/// Failures after which the broken inboxes here dead-letter a message.
const MAX_ATTEMPTS: u32 = 2;

/// Insert first, in one transaction, as it should; but any error from the
/// handler counts as a failure of the message, a storage fault included
/// (the `StorageError` is never told apart): a message whose write hit a
/// full disk is dead-lettered, though it would apply once the disk has
/// room. Caught by the storage fault in a handler's write.
pub struct FaultCounted;

impl<P: Project> InboxUnderTest<P> for FaultCounted {
    fn name(&self) -> String {
        "storage faults counted against the message".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            deliver_blaming_the_message(raw, handler, message, false)
        })
    }
}

/// Insert first, in one transaction; but a handler error that is a storage
/// fault is taken as final and the message refused at once (as if a
/// timeout said something about the message). Caught by the storage fault
/// in a handler's write.
pub struct FaultRefused;

impl<P: Project> InboxUnderTest<P> for FaultRefused {
    fn name(&self) -> String {
        "storage faults taken as final".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            deliver_blaming_the_message(raw, handler, message, true)
        })
    }
}

/// The real algorithm, except that a failed handler is the message's
/// fault whatever the error: counted (dead-lettered at the last attempt),
/// or, with `at_once`, refused at once.
fn deliver_blaming_the_message<P: Project>(
    raw: &mut dyn Raw<P>,
    handler: &HandlerOf<'_, P>,
    message: &Message<P::Event>,
    at_once: bool,
) -> Result<Outcome, StorageError> {
    let (consumer, id) = (handler.consumer(), message.id.as_str());
    raw.begin()?;
    if !raw.record(consumer, id, now_millis())? {
        raw.rollback();
        return Ok(Outcome::Duplicate);
    }
    let Err(error) = raw.apply(handler, message) else {
        raw.commit()?;
        return Ok(Outcome::Applied);
    };
    raw.rollback();
    let error = error.to_string();
    let failures = raw.count_failure(consumer, id, &error, now_millis())?;
    if !at_once && failures < MAX_ATTEMPTS {
        return Ok(Outcome::Failed(error));
    }
    let (event_type, payload) = message.event.encode();
    raw.dead_letter(&DeadLetter {
        consumer: consumer.to_owned(),
        message_id: id.to_owned(),
        event_type: event_type.to_owned(),
        payload,
        error: error.clone(),
        attempts: failures,
        refused: at_once,
        dead_at: now_millis(),
    })?;
    raw.record(consumer, id, now_millis())?;
    Ok(if at_once {
        Outcome::Refused(error)
    } else {
        Outcome::DeadLettered(error)
    })
}

/// The real inbox, except that a batch the database refused for a lock
/// timeout is reported as duplicates: "someone else has it, so it is
/// done". The other transaction may roll back; the message is then
/// acknowledged and never applied. Caught by the claim held by another
/// transaction.
pub struct LockTimeoutAsDuplicate;

struct TimeoutsAreDuplicates<P: Project>(Box<dyn Inbox<P::Registry>>);

impl<P: Project> Inbox<P::Registry> for TimeoutsAreDuplicates<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        match self.0.deliver_batch(batch) {
            Err(error) if error.is_storage_fault() => Ok(vec![Outcome::Duplicate; batch.len()]),
            other => other,
        }
    }
}

impl<P: Project> ImpatientUnderTest<P> for LockTimeoutAsDuplicate {
    fn name(&self) -> String {
        "lock timeouts taken as duplicates".into()
    }
    fn open(
        &self,
        fixture: &P::Fixture,
        policy: Policy,
        wait: Duration,
    ) -> Box<dyn Inbox<P::Registry>> {
        Box::new(TimeoutsAreDuplicates::<P>(
            fixture.impatient_inbox(policy, wait),
        ))
    }
}

/// Takes any error of a batch's claim as "already there", the way code
/// that matches a constraint error's class (or any error of the insert)
/// instead of the duplicate key's own code does: the message is
/// acknowledged and never applied. Caught by the claim the database
/// refuses.
pub struct ClaimErrorAsDuplicate;

struct ClaimErrorsAreDuplicates<P: Project>(Box<dyn Inbox<P::Registry>>);

impl<P: Project> Inbox<P::Registry> for ClaimErrorsAreDuplicates<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        match self.0.deliver_batch(batch) {
            Err(_) => Ok(vec![Outcome::Duplicate; batch.len()]),
            other => other,
        }
    }
}

impl<P: Project> InboxUnderTest<P> for ClaimErrorAsDuplicate {
    fn name(&self) -> String {
        "any claim error taken as a duplicate".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        Box::new(ClaimErrorsAreDuplicates::<P>(
            RealInbox::BATCHED.open(fixture),
        ))
    }
}

/// One transaction per batch, the inbox row inserted first, as it should;
/// but no savepoint per delivery, so a handler's statement that fails
/// takes its siblings with it. On PostgreSQL the error aborts the whole
/// transaction: the deliveries before it were reported applied and are
/// rolled back with it. On SQLite only the statement is undone: the
/// failing delivery's inbox row is committed without its debit, and the
/// redelivery calls it a duplicate. Caught by the debits that fail at
/// their statement.
pub struct NoSavepoints;

struct WithoutSavepoints<P: Project>(Box<dyn Raw<P>>);

impl<P: Project> Inbox<P::Registry> for WithoutSavepoints<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        self.0.begin()?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for delivery in batch {
            let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
            let outcome = match self.0.record(consumer, id, now_millis()) {
                Ok(false) => Outcome::Duplicate,
                Err(error) => Outcome::Failed(error.to_string()),
                Ok(true) => match self.0.apply(delivery.handler, delivery.message) {
                    Ok(()) => Outcome::Applied,
                    Err(error) => Outcome::Failed(error.to_string()),
                },
            };
            outcomes.push(outcome);
        }
        self.0.commit()?;
        Ok(outcomes)
    }
}

impl<P: Project> InboxUnderTest<P> for NoSavepoints {
    fn name(&self) -> String {
        "no savepoint per delivery".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        Box::new(WithoutSavepoints::<P>(fixture.raw()))
    }
}
