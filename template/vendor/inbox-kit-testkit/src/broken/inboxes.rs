//! Mistakes in the duplicate check itself.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::storage::StorageError;

use crate::harness::env::now_millis;
use crate::harness::{Fixture, InboxUnderTest, Project, RealInbox};

use super::{apply_and_commit, insert_first, one_at_a_time};

/// No inbox at all: every delivery applies.
/// Caught by run twice (each payment debited twice).
pub struct NoInbox;

impl<P: Project> InboxUnderTest<P> for NoInbox {
    fn name(&self) -> String {
        "no inbox".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            raw.begin()?;
            apply_and_commit(raw, handler, message)
        })
    }
}

/// Check-then-act: SELECT to see whether the message was processed, and
/// only then begin, update, and record it (ignoring a row already there).
/// Passes run twice (the second SELECT sees the row). Caught by parallel:
/// several workers SELECT before any of them commits, all see "new", and
/// all apply, while the inbox still ends up with exactly one row each.
pub struct CheckThenAct;

impl<P: Project> InboxUnderTest<P> for CheckThenAct {
    fn name(&self) -> String {
        "check-then-act".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            if raw.is_recorded(handler.consumer(), message.id.as_str())? {
                return Ok(Outcome::Duplicate);
            }
            raw.begin()?;
            if let Err(error) = raw.apply(handler, message) {
                raw.rollback();
                return Ok(Outcome::Failed(error.to_string()));
            }
            raw.record(handler.consumer(), message.id.as_str(), now_millis())?;
            raw.commit()?;
            Ok(Outcome::Applied)
        })
    }
}

/// Record-first: commit the inbox row in its own transaction, then apply
/// the update in another. Passes run twice and parallel. Caught by failure
/// then redelivery: the update fails, the id stays recorded, and the
/// redelivery is dropped as a duplicate; the payment is lost for good.
pub struct RecordFirst;

impl<P: Project> InboxUnderTest<P> for RecordFirst {
    fn name(&self) -> String {
        "record-first".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            raw.begin()?;
            let new = raw.record(handler.consumer(), message.id.as_str(), now_millis())?;
            raw.commit()?;
            if !new {
                return Ok(Outcome::Duplicate);
            }
            raw.begin()?;
            apply_and_commit(raw, handler, message)
        })
    }
}

/// A fresh id minted on receipt instead of the sender's id: every delivery
/// looks new. Caught by run twice (and restart).
pub struct MintedId;

static MINTED: AtomicU64 = AtomicU64::new(0);

impl<P: Project> InboxUnderTest<P> for MintedId {
    fn name(&self) -> String {
        "id minted on receipt".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            let minted = MINTED.fetch_add(1, Ordering::Relaxed);
            let received = Message {
                id: MessageId::new(format!("minted-{minted}")).expect("valid id"),
                event: message.event.clone(),
                trace_parent: None,
            };
            insert_first(raw, handler, &received)
        })
    }
}

/// Failed attempts counted inside the transaction that the failure rolls
/// back: the count is undone with everything else, never reaches the
/// maximum, and a poison message is retried forever instead of being
/// dead-lettered. Caught by the poison-message test.
pub struct AttemptsCountedInside;

impl<P: Project> InboxUnderTest<P> for AttemptsCountedInside {
    fn name(&self) -> String {
        "attempts counted inside the rolled-back transaction".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        one_at_a_time::<P>(fixture, |raw, handler, message| {
            let (consumer, id) = (handler.consumer(), message.id.as_str());
            raw.begin()?;
            if !raw.record(consumer, id, now_millis())? {
                raw.rollback();
                return Ok(Outcome::Duplicate);
            }
            match raw.apply(handler, message) {
                Ok(()) => {
                    raw.commit()?;
                    Ok(Outcome::Applied)
                }
                Err(error) => {
                    // Counted, then rolled back with everything else.
                    let _ = raw.count_failure(consumer, id, &error.to_string(), now_millis());
                    raw.rollback();
                    Ok(Outcome::Failed(error.to_string()))
                }
            }
        })
    }
}

/// Duplicates decided by a set of processed ids kept in the process's
/// memory (a cache that became the source of truth): the inbox row is
/// still written, but whether it was already there is never asked. Within
/// one process it is flawless: run twice, parallel (the set is shared and
/// locked) and failure then redelivery all pass. Caught only by restart,
/// whose second round runs in a new process with an empty memory.
pub struct RemembersInMemory;

/// (fixture, consumer, message id) of every message applied, per process.
static REMEMBERED: Mutex<Option<HashSet<(String, String, String)>>> = Mutex::new(None);

impl<P: Project> InboxUnderTest<P> for RemembersInMemory {
    fn name(&self) -> String {
        "processed ids remembered in memory".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        let database = fixture.identity();
        one_at_a_time::<P>(fixture, move |raw, handler, message| {
            let (consumer, id) = (handler.consumer(), message.id.as_str());
            let key = (database.clone(), consumer.to_owned(), id.to_owned());
            let mut remembered = REMEMBERED.lock().expect("memory");
            let remembered = remembered.get_or_insert_with(HashSet::new);
            if remembered.contains(&key) {
                return Ok(Outcome::Duplicate);
            }
            raw.begin()?;
            raw.record(consumer, id, now_millis())?; // already there? not asked
            let outcome = apply_and_commit(raw, handler, message)?;
            if outcome == Outcome::Applied {
                remembered.insert(key);
            }
            Ok(outcome)
        })
    }
}

/// The real inbox, except that a failed COMMIT is reported as if every
/// delivery had applied: the broker is told to forget messages that were
/// never stored. Caught only by the failed-commit scenario.
pub struct IgnoresFailedCommit;

struct ReportsAppliedAnyway<P: Project>(Box<dyn Inbox<P::Registry>>);

impl<P: Project> Inbox<P::Registry> for ReportsAppliedAnyway<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        Ok(self
            .0
            .deliver_batch(batch)
            .unwrap_or_else(|_| vec![Outcome::Applied; batch.len()]))
    }
}

impl<P: Project> InboxUnderTest<P> for IgnoresFailedCommit {
    fn name(&self) -> String {
        "failed commit reported as applied".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        Box::new(ReportsAppliedAnyway::<P>(RealInbox::BATCHED.open(fixture)))
    }
}
