//! The relay tests have teeth: each known-broken relay below is caught by
//! the scenario named in its test, on every run, and the real relay passes
//! all of them.
//!
//! The scenarios crash a relay in the middle of a batch (its sink dies
//! after a few sends, as a process killed mid-batch would), finish with a
//! healthy run, and judge what left the database.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use {{crate_name}}::handlers::Notification;
use {{crate_name}}::progress::Progress;
use {{crate_name}}::relay::{
    Outgoing, Queue, RelayCounts, RelayError, RelayPolicy, Sent, Sink, relay_batch,
};
use {{crate_name}}::store::Store;

use crate::support::database::Fixture;
use crate::{Recorder, keys_of, outbox_with, receive, row_of};

/// A relay under test: one batch's worth of its algorithm.
trait RelayUnderTest {
    fn name(&self) -> &'static str;
    fn batch(
        &self,
        fixture: &Fixture,
        queue: &mut dyn Queue<Notification>,
        sink: &mut dyn Sink<Notification>,
        policy: RelayPolicy,
    ) -> Result<RelayCounts, RelayError>;
}

/// The relay this crate ships.
struct Real;

impl RelayUnderTest for Real {
    fn name(&self) -> &'static str {
        "the real relay"
    }
    fn batch(
        &self,
        _fixture: &Fixture,
        queue: &mut dyn Queue<Notification>,
        sink: &mut dyn Sink<Notification>,
        policy: RelayPolicy,
    ) -> Result<RelayCounts, RelayError> {
        relay_batch(queue, sink, BATCH, policy, &Progress::default())
    }
}

/// Marks the batch sent, then sends it: a crash in between loses the rest
/// of the batch for good. Caught by the crash: rows never delivered.
struct MarksBeforeSending;

impl RelayUnderTest for MarksBeforeSending {
    fn name(&self) -> &'static str {
        "marks sent before sending"
    }
    fn batch(
        &self,
        _fixture: &Fixture,
        queue: &mut dyn Queue<Notification>,
        sink: &mut dyn Sink<Notification>,
        policy: RelayPolicy,
    ) -> Result<RelayCounts, RelayError> {
        let taken = queue.take(BATCH)?;
        let marked: Vec<(Outgoing, Sent)> = taken
            .iter()
            .map(|outgoing| (outgoing.clone(), Sent::Confirmed))
            .collect();
        queue.settle(&marked, policy)?;
        for outgoing in &taken {
            sink.send(outgoing);
        }
        Ok(RelayCounts {
            sent: taken.len() as u64,
            ..RelayCounts::default()
        })
    }
}

/// Gives every send a fresh key (a counter, a timestamp): a resend after a
/// crash looks new, and the receiver applies it twice. Caught by the
/// receiver's inbox.
struct KeyChangesOnResend;

static SENDS: AtomicU64 = AtomicU64::new(0);

/// Rewrites each outgoing key before the real sink sees it.
struct FreshKeys<'a>(&'a mut dyn Sink<Notification>);

impl Sink<Notification> for FreshKeys<'_> {
    fn send(&mut self, outgoing: &Outgoing) -> Sent {
        let mut fresh = outgoing.clone();
        fresh.key = format!("{}#{}", outgoing.key, SENDS.fetch_add(1, Ordering::Relaxed));
        self.0.send(&fresh)
    }
}

impl RelayUnderTest for KeyChangesOnResend {
    fn name(&self) -> &'static str {
        "a key that changes on every send"
    }
    fn batch(
        &self,
        _fixture: &Fixture,
        queue: &mut dyn Queue<Notification>,
        sink: &mut dyn Sink<Notification>,
        policy: RelayPolicy,
    ) -> Result<RelayCounts, RelayError> {
        relay_batch(
            queue,
            &mut FreshKeys(sink),
            BATCH,
            policy,
            &Progress::default(),
        )
    }
}

/// Deletes a row whose send failed instead of counting and parking it: a
/// notification the receiver refuses a while is gone for good. Caught by
/// the failing send, which must end parked and listed.
struct DeletesFailingRows;

impl RelayUnderTest for DeletesFailingRows {
    fn name(&self) -> &'static str {
        "deletes a row whose send failed"
    }
    fn batch(
        &self,
        fixture: &Fixture,
        queue: &mut dyn Queue<Notification>,
        sink: &mut dyn Sink<Notification>,
        policy: RelayPolicy,
    ) -> Result<RelayCounts, RelayError> {
        let taken = queue.take(BATCH)?;
        let results: Vec<(Outgoing, Sent)> = taken
            .into_iter()
            .map(|outgoing| {
                let sent = sink.send(&outgoing);
                (outgoing, sent)
            })
            .collect();
        let (failed, sent): (Vec<_>, Vec<_>) = results
            .into_iter()
            .partition(|(_, sent)| matches!(sent, Sent::Failed(_)));
        queue.settle(&sent, policy)?;
        for (outgoing, _) in &failed {
            let row = &outgoing.notification;
            fixture.run_sql(&format!(
                "DELETE FROM notifications WHERE event_id = '{}' AND channel = '{}'",
                row.event_id, row.channel
            ));
        }
        Ok(RelayCounts {
            sent: sent.len() as u64,
            ..RelayCounts::default()
        })
    }
}

const BATCH: usize = 20;

/// A sink that dies (panics, as a killed process stops) at its
/// `survives + 1`-th send.
struct DiesAfter {
    inner: Recorder,
    survives: usize,
}

impl Sink<Notification> for DiesAfter {
    fn send(&mut self, outgoing: &Outgoing) -> Sent {
        assert!(self.survives > 0, "the relay process dies here");
        self.survives -= 1;
        self.inner.send(outgoing)
    }
}

/// Crashes `relay` after 5 sends of a 20-row batch, then finishes with it;
/// returns every line the receiver got.
fn crash_then_finish(relay: &dyn RelayUnderTest) -> (Fixture, Vec<String>) {
    let fixture = outbox_with(10);
    let recorder = Recorder::default();
    let policy = RelayPolicy::default();
    {
        let mut queue = fixture.database().relay_queue().unwrap();
        let mut dying = DiesAfter {
            inner: recorder.clone(),
            survives: 5,
        };
        let crashed = catch_unwind(AssertUnwindSafe(|| {
            relay.batch(&fixture, &mut queue, &mut dying, policy)
        }));
        assert!(crashed.is_err(), "the sink did not die");
    }
    // The dead relay's connection closed with it; a server ends its
    // session, and unlocks the rows it had taken, a moment later.
    let closing = Instant::now();
    while fixture.sessions_holding_locks() > 0 {
        assert!(
            closing.elapsed() < Duration::from_secs(60),
            "the dead relay's session still holds its rows after a minute"
        );
        std::thread::yield_now();
    }
    let mut queue = fixture.database().relay_queue().unwrap();
    let mut healthy = recorder.clone();
    for _ in 0..10 {
        relay
            .batch(&fixture, &mut queue, &mut healthy, policy)
            .unwrap();
    }
    (fixture, recorder.lines())
}

/// Every row reached the receiver at least once.
fn nothing_lost(relay: &dyn RelayUnderTest) -> Result<(), String> {
    let (fixture, lines) = crash_then_finish(relay);
    let delivered: BTreeSet<String> = lines.iter().map(|line| row_of(line)).collect();
    let missing: Vec<_> = keys_of(&fixture).difference(&delivered).cloned().collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: never delivered: {missing:?}", relay.name()))
    }
}

/// The receiver's inbox applied each row once, resends included.
fn receiver_applies_each_once(relay: &dyn RelayUnderTest) -> Result<(), String> {
    let (fixture, lines) = crash_then_finish(relay);
    let rows = keys_of(&fixture).len() as u64;
    let (applied, duplicates) = receive(&lines);
    if applied == rows && duplicates > 0 {
        Ok(())
    } else {
        Err(format!(
            "{}: the receiver applied {applied} notifications for {rows} rows ({duplicates} duplicates caught)",
            relay.name()
        ))
    }
}

/// A row the receiver keeps refusing ends parked, kept and listed.
fn failing_row_is_parked(relay: &dyn RelayUnderTest) -> Result<(), String> {
    let fixture = outbox_with(3);
    let refused = "email:pay-00002".to_owned();
    struct RefusesOne(Recorder, String);
    impl Sink<Notification> for RefusesOne {
        fn send(&mut self, outgoing: &Outgoing) -> Sent {
            if outgoing.key == self.1 {
                return Sent::Failed("refused".into());
            }
            self.0.send(outgoing)
        }
    }
    let mut sink = RefusesOne(Recorder::default(), refused.clone());
    let policy = RelayPolicy {
        max_attempts: 2,
        retry_after: Duration::from_millis(1),
    };
    let mut queue = fixture.database().relay_queue().unwrap();
    for _ in 0..50 {
        relay
            .batch(&fixture, &mut queue, &mut sink, policy)
            .unwrap();
        if queue.remaining().unwrap() == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let parked: Vec<String> = queue.parked().unwrap().into_iter().map(|p| p.key).collect();
    if parked == [refused.clone()] && keys_of(&fixture).contains(&refused) {
        Ok(())
    } else {
        Err(format!(
            "{}: the refused row is {} and parked rows are {parked:?}",
            relay.name(),
            if keys_of(&fixture).contains(&refused) {
                "kept"
            } else {
                "gone"
            }
        ))
    }
}

fn caught(result: Result<(), String>, what: &str) {
    match result {
        Ok(()) => panic!("{what} was not caught"),
        Err(violation) => println!("caught: {violation}"),
    }
}

#[test]
fn the_real_relay_passes_every_scenario() {
    nothing_lost(&Real).unwrap();
    receiver_applies_each_once(&Real).unwrap();
    failing_row_is_parked(&Real).unwrap();
}

#[test]
fn marking_before_sending_is_caught_by_a_crash() {
    caught(nothing_lost(&MarksBeforeSending), MarksBeforeSending.name());
}

#[test]
fn a_key_that_changes_on_resend_is_caught_by_the_receiver() {
    nothing_lost(&KeyChangesOnResend).expect("it loses nothing");
    caught(
        receiver_applies_each_once(&KeyChangesOnResend),
        KeyChangesOnResend.name(),
    );
}

#[test]
fn deleting_a_failing_row_is_caught_by_the_refused_send() {
    nothing_lost(&DeletesFailingRows).expect("it loses nothing in a crash");
    caught(
        failing_row_is_parked(&DeletesFailingRows),
        DeletesFailingRows.name(),
    );
}
