//! Known-broken implementations, kept so the tests can prove they catch
//! them. Each one is a mistake that looks right in review; the comment on
//! each says which scenario catches it and why. They are written once for
//! every database from the steps in `raw.rs`; the traps only one database
//! has live in its own support module. None of this is ever used by the
//! consumer itself.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use unicode_normalization::UnicodeNormalization;

use {{crate_name}}::database::Database;
use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError};
use {{crate_name}}::handlers::{Debit, Tables};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::store::Purged;

use crate::support::database::Fixture;
use crate::support::harness::{InboxUnderTest, Purger, RealInbox, RealPurge, Scenario, now_millis};
use crate::support::raw::Raw;

/// Every broken inbox written here, for tests that run them all.
pub fn all_inboxes() -> Vec<Box<dyn InboxUnderTest>> {
    vec![
        Box::new(NoInbox),
        Box::new(CheckThenAct),
        Box::new(RecordFirst),
        Box::new(MintedId),
        Box::new(AttemptsCountedInside),
        Box::new(RemembersInMemory),
        Box::new(FoldsCase),
        Box::new(TrimsIds),
        Box::new(NormalizesIds),
        Box::new(TruncatesIds),
        Box::new(IgnoresFailedCommit),
    ]
}

/// A broken inbox written as "one delivery at a time" on a raw connection.
pub struct OneAtATime<F> {
    raw: Box<dyn Raw>,
    deliver: F,
}

impl<F> Inbox for OneAtATime<F>
where
    F: FnMut(&mut dyn Raw, &dyn Handler, &Message) -> Result<Outcome, StorageError> + Send,
{
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        Ok(batch
            .iter()
            .map(|d| {
                (self.deliver)(self.raw.as_mut(), d.handler, d.message).unwrap_or_else(|error| {
                    self.raw.rollback();
                    Outcome::Failed(error.to_string())
                })
            })
            .collect())
    }
}

pub fn one_at_a_time<F>(fixture: &Fixture, deliver: F) -> Box<dyn Inbox>
where
    F: FnMut(&mut dyn Raw, &dyn Handler, &Message) -> Result<Outcome, StorageError>
        + Send
        + 'static,
{
    Box::new(OneAtATime {
        raw: fixture.raw(),
        deliver,
    })
}

/// Runs the handler in the open transaction and commits, or rolls back and
/// reports the failure.
fn apply_and_commit(
    raw: &mut dyn Raw,
    handler: &dyn Handler,
    message: &Message,
) -> Result<Outcome, StorageError> {
    match raw.apply(handler, message) {
        Ok(()) => {
            raw.commit()?;
            Ok(Outcome::Applied)
        }
        Err(error) => {
            raw.rollback();
            Ok(Outcome::Failed(error.to_string()))
        }
    }
}

/// The real algorithm (insert first, then apply, one transaction) written
/// by hand, for broken variants that change only its inputs.
pub fn insert_first(
    raw: &mut dyn Raw,
    handler: &dyn Handler,
    message: &Message,
) -> Result<Outcome, StorageError> {
    raw.begin()?;
    if !raw.record(handler.consumer(), message.id.as_str(), now_millis())? {
        raw.rollback();
        return Ok(Outcome::Duplicate);
    }
    apply_and_commit(raw, handler, message)
}

/// No inbox at all: every delivery applies.
/// Caught by run twice (each payment debited twice).
pub struct NoInbox;

impl InboxUnderTest for NoInbox {
    fn name(&self) -> String {
        "no inbox".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        one_at_a_time(fixture, |raw, handler, message| {
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

impl InboxUnderTest for CheckThenAct {
    fn name(&self) -> String {
        "check-then-act".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        one_at_a_time(fixture, |raw, handler, message| {
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

impl InboxUnderTest for RecordFirst {
    fn name(&self) -> String {
        "record-first".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        one_at_a_time(fixture, |raw, handler, message| {
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

impl InboxUnderTest for MintedId {
    fn name(&self) -> String {
        "id minted on receipt".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        one_at_a_time(fixture, |raw, handler, message| {
            let minted = MINTED.fetch_add(1, Ordering::Relaxed);
            let received = Message {
                id: MessageId::new(format!("minted-{minted}")).expect("valid id"),
                event: message.event.clone(),
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

impl InboxUnderTest for AttemptsCountedInside {
    fn name(&self) -> String {
        "attempts counted inside the rolled-back transaction".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        one_at_a_time(fixture, |raw, handler, message| {
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

impl InboxUnderTest for RemembersInMemory {
    fn name(&self) -> String {
        "processed ids remembered in memory".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        let database = fixture.identity();
        one_at_a_time(fixture, move |raw, handler, message| {
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

/// The real inbox, given ids rewritten by `rewrite` before they are
/// recorded: how an inbox that "cleans up" ids behaves.
struct RewritesIds {
    inner: Box<dyn Inbox>,
    rewrite: fn(&str) -> String,
}

impl Inbox for RewritesIds {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let messages: Vec<Message> = batch
            .iter()
            .map(|d| Message {
                id: MessageId::new((self.rewrite)(d.message.id.as_str()))
                    .unwrap_or_else(|_| d.message.id.clone()),
                event: d.message.event.clone(),
            })
            .collect();
        let rewritten: Vec<Delivery<'_>> = batch
            .iter()
            .zip(&messages)
            .map(|(d, message)| Delivery {
                delivered: d.delivered,
                ..Delivery::new(d.handler, message)
            })
            .collect();
        self.inner.deliver_batch(&rewritten)
    }
}

fn rewriting(fixture: &Fixture, rewrite: fn(&str) -> String) -> Box<dyn Inbox> {
    Box::new(RewritesIds {
        inner: RealInbox::BATCHED.open(fixture),
        rewrite,
    })
}

/// Ids compared without regard to letter case (lower-cased before they are
/// recorded, as a case-insensitive column or index would). `Order-A1` and
/// `order-a1` are two messages; this inbox drops the second. Caught only by
/// exact ids.
pub struct FoldsCase;

impl InboxUnderTest for FoldsCase {
    fn name(&self) -> String {
        "ids folded to lower case".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        rewriting(fixture, str::to_lowercase)
    }
}

/// Ids trimmed of surrounding whitespace before they are recorded. Caught
/// only by exact ids.
pub struct TrimsIds;

impl InboxUnderTest for TrimsIds {
    fn name(&self) -> String {
        "ids trimmed".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        rewriting(fixture, |id| id.trim().to_owned())
    }
}

/// Ids put into Unicode normal form C before they are recorded: two ids
/// that merely look alike become one. Caught only by exact ids.
pub struct NormalizesIds;

impl InboxUnderTest for NormalizesIds {
    fn name(&self) -> String {
        "ids normalized (NFC)".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        rewriting(fixture, |id| id.nfc().collect())
    }
}

/// Ids cut to 64 bytes (a column too narrow that truncates): two long ids
/// that differ near the end become one. Caught only by exact ids.
pub struct TruncatesIds;

impl InboxUnderTest for TruncatesIds {
    fn name(&self) -> String {
        "ids truncated to 64 bytes".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        rewriting(fixture, |id| {
            let mut end = id.len().min(64);
            while !id.is_char_boundary(end) {
                end -= 1;
            }
            id[..end].to_owned()
        })
    }
}

/// The real inbox, except that a failed COMMIT is reported as if every
/// delivery had applied: the broker is told to forget messages that were
/// never stored. Caught only by the failed-commit scenario.
pub struct IgnoresFailedCommit;

struct ReportsAppliedAnyway(Box<dyn Inbox>);

impl Inbox for ReportsAppliedAnyway {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        Ok(self
            .0
            .deliver_batch(batch)
            .unwrap_or_else(|_| vec![Outcome::Applied; batch.len()]))
    }
}

impl InboxUnderTest for IgnoresFailedCommit {
    fn name(&self) -> String {
        "failed commit reported as applied".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        Box::new(ReportsAppliedAnyway(RealInbox::BATCHED.open(fixture)))
    }
}

/// A database-specific trap: a broken inbox, the scenarios it passes, and
/// the one that must catch it.
pub struct Trap {
    pub inbox: Box<dyn InboxUnderTest>,
    pub passes: Vec<Scenario>,
    pub caught_by: Scenario,
}

/// The real inbox on a schema changed by `patch` (SQL run on a fresh
/// database): how a broken unique key is tried.
pub struct WithSchema {
    pub name: &'static str,
    pub patch: &'static str,
}

impl InboxUnderTest for WithSchema {
    fn name(&self) -> String {
        self.name.to_owned()
    }
    fn prepare(&self, fixture: &Fixture) {
        fixture.execute(self.patch);
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox> {
        RealInbox::BATCHED.open(fixture)
    }
}

/// A purge whose cutoff is three hours late: it deletes rows that are still
/// inside the window, so a redelivery in those hours applies twice. Caught
/// only by the purge at the window's edge.
pub struct SloppyPurge;

impl Purger for SloppyPurge {
    fn name(&self) -> String {
        "purge three hours too eager".into()
    }
    fn purge(&self, database: &Database, older_than: Duration) -> Purged {
        RealPurge.purge(database, older_than - Duration::from_secs(3 * 3600))
    }
}

/// A handler that does nothing and succeeds. Every duplicate test passes
/// ("nothing happened twice"); caught by the model, which says what should
/// have happened once.
pub struct DoesNothing(pub Arc<dyn Handler>);

impl Handler for DoesNothing {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        self.0.subscribes_to(event)
    }
    fn apply(&self, _tables: &mut dyn Tables, _message: &Message) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// `debit` taking one unit too much from every payment, consistently: the
/// once-only oracle agrees with it (it runs the same handler); caught by
/// the model.
pub struct DebitsTooMuch;

impl Handler for DebitsTooMuch {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
        let mut payment = message.event.payment_captured().expect("a payment").clone();
        payment.amount += 1;
        let message = Message {
            id: message.id.clone(),
            event: Event::PaymentCaptured(payment),
        };
        Debit.apply(tables, &message)
    }
}
