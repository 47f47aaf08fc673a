//! Known-broken implementations, kept so the tests can prove they catch
//! them. Each one is a mistake that looks right in review; the comment on
//! each says which test catches it and why. None of this is ever used by
//! the consumer itself.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, Transaction, TransactionBehavior};

use {{crate_name}}::database::{Database, Settings};
use {{crate_name}}::handler::{Handler, HandlerError};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError, is_duplicate_key};
use {{crate_name}}::message::{Message, MessageId};

use super::harness::InboxUnderTest;

/// Every broken inbox, for tests that run them all.
pub fn all_inboxes() -> Vec<Box<dyn InboxUnderTest>> {
    vec![
        Box::new(NoInbox),
        Box::new(CheckThenAct),
        Box::new(RecordFirst),
        Box::new(KeyedByMessageId),
        Box::new(MintedId),
        Box::new(DeferredCheck),
        Box::new(AttemptsCountedInside),
    ]
}

/// Opens a connection configured exactly like the real inbox's, so that the
/// broken implementations differ from it only in their algorithm.
fn connect(path: &Path) -> Connection {
    Database::new(path, Settings::default())
        .connect()
        .expect("open connection")
}

/// A broken inbox written as "one delivery at a time".
struct OneAtATime<F> {
    db: Connection,
    deliver: F,
}

impl<F> Inbox for OneAtATime<F>
where
    F: FnMut(&mut Connection, &dyn Handler, &Message) -> rusqlite::Result<Outcome> + Send,
{
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        Ok(batch
            .iter()
            .map(|d| {
                (self.deliver)(&mut self.db, d.handler, d.message)
                    .unwrap_or_else(|error| Outcome::Failed(error.to_string()))
            })
            .collect())
    }
}

fn one_at_a_time<F>(path: &Path, deliver: F) -> Box<dyn Inbox>
where
    F: FnMut(&mut Connection, &dyn Handler, &Message) -> rusqlite::Result<Outcome> + Send + 'static,
{
    Box::new(OneAtATime {
        db: connect(path),
        deliver,
    })
}

/// Runs the handler in `tx` and commits, or reports the failure (dropping
/// `tx` rolls everything in it back).
fn apply_and_commit(
    tx: Transaction<'_>,
    handler: &dyn Handler,
    message: &Message,
) -> rusqlite::Result<Outcome> {
    match handler.apply(&tx, message) {
        Ok(()) => {
            tx.commit()?;
            Ok(Outcome::Applied)
        }
        Err(error) => Ok(Outcome::Failed(error.to_string())),
    }
}

fn insert_inbox_row(db: &Connection, consumer: &str, id: &str) -> rusqlite::Result<usize> {
    db.execute(
        "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, 0)",
        (consumer, id),
    )
}

/// The real algorithm (insert first, then apply, one IMMEDIATE
/// transaction), for broken variants that change only its inputs.
fn insert_first(
    db: &mut Connection,
    handler: &dyn Handler,
    message: &Message,
) -> rusqlite::Result<Outcome> {
    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
    match insert_inbox_row(&tx, handler.consumer(), message.id.as_str()) {
        Err(error) if is_duplicate_key(&error) => return Ok(Outcome::Duplicate),
        other => other?,
    };
    apply_and_commit(tx, handler, message)
}

/// No inbox at all: every delivery applies.
/// Caught by run twice (each payment debited twice).
pub struct NoInbox;

impl InboxUnderTest for NoInbox {
    fn name(&self) -> String {
        "no inbox".into()
    }
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, |db, handler, message| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            apply_and_commit(tx, handler, message)
        })
    }
}

/// Check-then-act: SELECT to see whether the message was processed, and
/// only then BEGIN, update, and record it with INSERT OR IGNORE.
/// Passes run twice (the second SELECT sees the row). Caught by parallel:
/// several workers SELECT before any of them commits, all see "new", and
/// all apply, while the inbox still ends up with exactly one row each.
pub struct CheckThenAct;

impl InboxUnderTest for CheckThenAct {
    fn name(&self) -> String {
        "check-then-act".into()
    }
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, |db, handler, message| {
            let seen: bool = db.query_row(
                "SELECT EXISTS (SELECT 1 FROM inbox WHERE consumer = ?1 AND message_id = ?2)",
                (handler.consumer(), message.id.as_str()),
                |row| row.get(0),
            )?;
            if seen {
                return Ok(Outcome::Duplicate);
            }
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Err(error) = handler.apply(&tx, message) {
                return Ok(Outcome::Failed(error.to_string()));
            }
            tx.execute(
                "INSERT OR IGNORE INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, 0)",
                (handler.consumer(), message.id.as_str()),
            )?;
            tx.commit()?;
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
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, |db, handler, message| {
            match insert_inbox_row(db, handler.consumer(), message.id.as_str()) {
                Err(error) if is_duplicate_key(&error) => return Ok(Outcome::Duplicate),
                other => other?,
            };
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            apply_and_commit(tx, handler, message)
        })
    }
}

/// The inbox keyed by message id alone. Passes every single-consumer test.
/// Caught by both consumers: once `debit` has recorded a message, `notify`
/// sees its id as a duplicate and never sends the notifications.
pub struct KeyedByMessageId;

impl InboxUnderTest for KeyedByMessageId {
    fn name(&self) -> String {
        "inbox keyed by message id alone".into()
    }
    fn create(&self, path: &Path, handlers: &[Arc<dyn Handler>]) {
        let db = connect(path);
        db.pragma_update(None, "journal_mode", "WAL").expect("WAL");
        db.execute_batch(
            "CREATE TABLE inbox (
                 consumer    TEXT    NOT NULL,
                 message_id  TEXT    NOT NULL PRIMARY KEY,
                 received_at INTEGER NOT NULL
             );",
        )
        .expect("broken inbox schema");
        for handler in handlers {
            db.execute_batch(handler.schema()).expect("handler schema");
        }
    }
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, insert_first)
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
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, |db, handler, message| {
            let minted = MINTED.fetch_add(1, Ordering::Relaxed);
            let received = Message {
                id: MessageId::new(format!("minted-{minted}")).expect("valid id"),
                event: message.event.clone(),
            };
            insert_first(db, handler, &received)
        })
    }
}

/// A deferred `BEGIN` where `BEGIN IMMEDIATE` belongs, in a transaction
/// that reads before it writes (here: it double-checks the inbox with a
/// SELECT before inserting). Under IMMEDIATE this code is safe on SQLite,
/// because the write lock is taken before the read. Under DEFERRED the
/// read pins a snapshot; when another worker commits first, SQLite cannot
/// upgrade that snapshot to a write and fails at once with SQLITE_BUSY,
/// whatever the busy timeout. Caught by parallel: deliveries fail under
/// contention, and a contended lock must never be a failure.
pub struct DeferredCheck;

impl InboxUnderTest for DeferredCheck {
    fn name(&self) -> String {
        "deferred BEGIN".into()
    }
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, |db, handler, message| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Deferred)?;
            let seen: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM inbox WHERE consumer = ?1 AND message_id = ?2)",
                (handler.consumer(), message.id.as_str()),
                |row| row.get(0),
            )?;
            if seen {
                return Ok(Outcome::Duplicate);
            }
            insert_inbox_row(&tx, handler.consumer(), message.id.as_str())?;
            if let Err(error) = handler.apply(&tx, message) {
                return Ok(Outcome::Failed(error.to_string()));
            }
            tx.commit()?;
            Ok(Outcome::Applied)
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
    fn open(&self, path: &Path) -> Box<dyn Inbox> {
        one_at_a_time(path, |db, handler, message| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            match insert_inbox_row(&tx, handler.consumer(), message.id.as_str()) {
                Err(error) if is_duplicate_key(&error) => return Ok(Outcome::Duplicate),
                other => other?,
            };
            match handler.apply(&tx, message) {
                Ok(()) => {
                    tx.commit()?;
                    Ok(Outcome::Applied)
                }
                Err(error) => {
                    tx.execute(
                        "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
                         VALUES (?1, ?2, 1, ?3, 0)
                         ON CONFLICT (consumer, message_id) DO UPDATE SET failures = failures + 1",
                        (handler.consumer(), message.id.as_str(), error.to_string()),
                    )?;
                    Ok(Outcome::Failed(error.to_string())) // dropping `tx` rolls the count back
                }
            }
        })
    }
}

/// `notify` with its notifications table unique on `event_id` alone. The
/// inbox hides the mistake from every duplicate test; it is caught by the
/// fan-out test, because one event legitimately yields a row per channel
/// and the second row is refused.
pub struct NotifyUniqueOnEventId;

impl Handler for NotifyUniqueOnEventId {
    fn consumer(&self) -> &'static str {
        "notify"
    }
    fn subscribes_to(&self, event: &{{crate_name}}::event::Event) -> bool {
        {{crate_name}}::handlers::Notify.subscribes_to(event)
    }
    fn schema(&self) -> &'static str {
        "CREATE TABLE IF NOT EXISTS notifications (
             event_id TEXT    NOT NULL UNIQUE,
             channel  TEXT    NOT NULL,
             account  INTEGER NOT NULL,
             body     TEXT    NOT NULL
         );"
    }
    fn apply(&self, db: &Connection, message: &Message) -> Result<(), HandlerError> {
        {{crate_name}}::handlers::Notify.apply(db, message)
    }
}
