//! What the group's committed offsets say, and when: a message that keeps
//! failing holds its partition's offset back, so a restart reads it again
//! (however many later messages committed); a storage outage commits
//! nothing.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, Subscriber};
use {{crate_name}}::handlers::{AnyHandler, Debit, Handlers, Tables};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, Policy, StorageError, StorageFault};
use {{crate_name}}::message::Message;

use crate::support::harness::{
    FailFor, RealInbox, applied_once_problems, assert_applied_once, fixture_for, inbox_rows,
};
use crate::support::kafka::Broker;
use crate::support::subjects::{DebitSubject, payments};
use crate::{GROUP, SourceKind, consume_until, consume_until_drained, real_inbox};

/// Fails every attempt at one message, counting them.
struct Counted {
    inner: FailFor<Debit>,
    id: String,
    attempts: Arc<AtomicU32>,
}

impl Subscriber<Event> for Counted {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        self.inner.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for Counted {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        if message.id.as_str() == self.id {
            self.attempts.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.apply(tables, message)
    }
}

/// 20 payments; the 5th fails while a first consumer runs, until it was
/// retried once and every other one applied. A second consumer of the
/// group, with nothing failing, must then read it again. Returns what is
/// wrong with the end state.
pub fn failing_message_across_a_restart(kind: SourceKind) -> Vec<String> {
    let broker = Broker::start();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(20);
    for message in &messages {
        broker.publish(message);
    }
    let failing = messages[4].id.as_str().to_owned();
    let attempts = Arc::new(AtomicU32::new(0));
    let handler = Counted {
        inner: FailFor::new(Arc::new(Debit), HashSet::from([failing.clone()])),
        id: failing,
        attempts: attempts.clone(),
    };
    // Many attempts allowed: it is retried, never dead-lettered, here.
    let policy = Policy { max_attempts: 100 };
    let first = consume_until(
        &broker,
        kind,
        vec![Arc::new(handler) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
        // A retry comes after a wait of its own: by then the source has
        // committed what the others' settles allowed, several rounds over.
        || attempts.load(Ordering::SeqCst) >= 2 && inbox_rows(&fixture, "debit") == 19,
    );
    assert!(
        first.reached,
        "the first consumer never got that far: {first:?}"
    );
    let second = consume_until(
        &broker,
        kind,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
        || broker.uncommitted(GROUP) == 0,
    );
    println!(
        "first run: {}; second run: {} (redeliveries {})",
        first.report.summary, second.report.summary, second.redelivered
    );
    let mut problems = applied_once_problems(&fixture, &debit, &messages);
    if !second.reached {
        problems.push("the second consumer did not commit the topic".into());
    }
    problems
}

#[test]
fn a_failing_message_holds_its_partition_back_across_a_restart() {
    let problems = failing_message_across_a_restart(SourceKind::Real);
    assert!(problems.is_empty(), "{}", problems.join("; "));
}

/// The real inbox, except that its first `failures` batches fail with a
/// storage error (the database away), counted.
struct Outage<I> {
    inner: I,
    failures: u64,
    failed: Arc<AtomicU64>,
}

impl<I: Inbox<Handlers>> Inbox<Handlers> for Outage<I> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        if self.failed.fetch_add(1, Ordering::SeqCst) < self.failures {
            return Err(StorageError::new(
                StorageFault::Unavailable,
                "injected: the database is away",
            ));
        }
        self.inner.deliver_batch(batch)
    }
}

#[test]
fn a_storage_outage_commits_no_offset_and_the_messages_come_back() {
    let broker = Broker::start();
    let debit = DebitSubject::real();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit]);
    let messages = payments(30);
    for message in &messages {
        broker.publish(message);
    }
    let policy = Policy::default();
    let failed = Arc::new(AtomicU64::new(0));
    let open = {
        let database = fixture.database();
        let failed = failed.clone();
        move || {
            Ok(Outage {
                inner: {{crate_name}}::store::Store::inbox(&database, policy)?,
                failures: u64::MAX,
                failed: failed.clone(),
            })
        }
    };
    // While every transaction fails, and after several retry rounds, the
    // group has committed nothing.
    let during = consume_until(
        &broker,
        SourceKind::Real,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        open,
        || failed.load(Ordering::SeqCst) >= 6,
    );
    assert!(during.reached, "{during:?}");
    assert_eq!(
        broker.committed(GROUP),
        [None, None, None],
        "offsets committed while the database was away"
    );
    assert_eq!(inbox_rows(&fixture, "debit"), 0);
    let after = consume_until_drained(
        &broker,
        SourceKind::Real,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
    );
    println!(
        "during the outage: {} failed transactions, {} retried; after: {}",
        failed.load(Ordering::SeqCst),
        during.redelivered,
        after.report.summary
    );
    assert!(during.redelivered > 0, "nothing was retried: {during:?}");
    assert_applied_once(&fixture, &debit, &messages);
}
