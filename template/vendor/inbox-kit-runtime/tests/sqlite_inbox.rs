//! The SQLite inbox, driven the way a project drives it but with stand-in
//! consumers that add amounts to one total: each delivery applies once
//! however often it arrives, a failure leaves nothing behind and applies
//! on redelivery, a message that keeps failing or is refused becomes a
//! dead letter, a set-based run falls back to one delivery at a time, and
//! four workers on one file apply each message once.
//!
//! The amount says what the stand-ins do: above zero they add it; zero is
//! refused; below zero fails after a write that must be rolled back; 13
//! panics; 7 fails while the `outage` table has a row.

use std::sync::atomic::{AtomicUsize, Ordering};

use inbox_kit_runtime::delivery::{DeadLetters, Delivery, Inbox};
use inbox_kit_runtime::handler::{Handler, HandlerError, Refused, Registry, SetBased, Subscriber};
use inbox_kit_runtime::inbox::{Outcome, Policy};
use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::sqlite::{SCHEMA, SqliteHandlers, SqliteInbox};
use rusqlite::Connection;

const TOTAL: &str = "CREATE TABLE total (sum INTEGER NOT NULL);
    INSERT INTO total VALUES (0);
    CREATE TABLE outage (since INTEGER);";

/// The stand-ins' tables: the delivery's connection.
struct Total<'c>(&'c Connection);

impl Total<'_> {
    fn add(&self, amount: i64) -> Result<(), HandlerError> {
        self.0
            .execute("UPDATE total SET sum = sum + ?1", [amount])?;
        Ok(())
    }

    fn in_outage(&self) -> Result<bool, HandlerError> {
        Ok(self
            .0
            .query_row("SELECT count(*) > 0 FROM outage", [], |row| row.get(0))?)
    }
}

/// One amount, as the stand-ins treat it (see the module doc).
fn apply_amount(total: &Total<'_>, amount: i64) -> Result<(), HandlerError> {
    match amount {
        0 => Err(Refused::because("nothing to add").into()),
        13 => {
            total.add(1000)?;
            panic!("unlucky amount")
        }
        7 if total.in_outage()? => Err("the total is in an outage".into()),
        amount if amount < 0 => {
            total.add(1000)?;
            Err(format!("cannot add {amount}").into())
        }
        amount => total.add(amount),
    }
}

/// Adds one amount per delivery.
struct Credit;

/// Adds amounts, many at once when it can; counts its set-based runs.
struct Bulk(AtomicUsize);

impl Subscriber<i64> for Credit {
    fn consumer(&self) -> &'static str {
        "credit"
    }
    fn subscribes_to(&self, _: &i64) -> bool {
        true
    }
}

impl Subscriber<i64> for Bulk {
    fn consumer(&self) -> &'static str {
        "bulk"
    }
    fn subscribes_to(&self, _: &i64) -> bool {
        true
    }
}

impl<'c> Handler<i64, Total<'c>> for Credit {
    fn apply(&self, total: &mut Total<'c>, message: &Message<i64>) -> Result<(), HandlerError> {
        apply_amount(total, message.event)
    }
}

impl<'c> Handler<i64, Total<'c>> for Bulk {
    fn apply(&self, total: &mut Total<'c>, message: &Message<i64>) -> Result<(), HandlerError> {
        apply_amount(total, message.event)
    }
    fn set_based(&self) -> Option<&dyn SetBased<i64, Total<'c>>> {
        Some(self)
    }
}

impl<'c> SetBased<i64, Total<'c>> for Bulk {
    fn apply_all(
        &self,
        total: &mut Total<'c>,
        messages: &[&Message<i64>],
    ) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        if messages.iter().any(|message| message.event <= 0) {
            total.add(1000)?;
            return Err("one of them cannot be added".into());
        }
        total.add(messages.iter().map(|message| message.event).sum())
    }
}

/// The stand-ins' project.
struct Stand;

type Any<'a> = dyn for<'c> Handler<i64, Total<'c>> + 'a;

/// [`Credit`] as the inbox holds it.
const CREDIT: &Any<'static> = &Credit;

impl Registry for Stand {
    type Event = i64;
    type Handler<'a> = Any<'a>;
    fn has_set_based(handler: &Any<'_>) -> bool {
        handler.set_based().is_some()
    }
    fn encode(event: &i64) -> (&'static str, String) {
        ("Amount", event.to_string())
    }
}

impl SqliteHandlers for Stand {
    fn apply(
        handler: &Any<'_>,
        db: &Connection,
        message: &Message<i64>,
    ) -> Result<(), HandlerError> {
        handler.apply(&mut Total(db), message)
    }
    fn apply_all(
        handler: &Any<'_>,
        db: &Connection,
        messages: &[&Message<i64>],
    ) -> Result<(), HandlerError> {
        let set_based = handler
            .set_based()
            .expect("only called with a set-based path");
        set_based.apply_all(&mut Total(db), messages)
    }
}

fn message(id: &str, amount: i64) -> Message<i64> {
    Message {
        id: MessageId::new(id).expect("a valid id"),
        event: amount,
        trace_parent: None,
    }
}

fn prepare(db: &Connection) {
    db.execute_batch(SCHEMA).expect("the inbox's tables");
    db.execute_batch(TOTAL).expect("the stand-ins' tables");
}

fn inbox(max_attempts: u32) -> SqliteInbox<Stand> {
    let db = Connection::open_in_memory().expect("in-memory database");
    prepare(&db);
    SqliteInbox::new(db, Policy { max_attempts })
}

fn sum(inbox: &SqliteInbox<Stand>) -> i64 {
    sum_of(inbox.connection())
}

fn sum_of(db: &Connection) -> i64 {
    db.query_row("SELECT sum FROM total", [], |row| row.get(0))
        .expect("the total")
}

fn inbox_rows(db: &Connection) -> i64 {
    db.query_row("SELECT count(*) FROM inbox", [], |row| row.get(0))
        .expect("the inbox rows")
}

fn failed(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Failed(_))
}

#[test]
fn a_delivery_applies_once_however_often_it_arrives() {
    let mut inbox = inbox(3);
    let once = message("m-1", 5);
    let outcomes: Vec<Outcome> = (0..3)
        .map(|_| inbox.deliver(CREDIT, &once).unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [Outcome::Applied, Outcome::Duplicate, Outcome::Duplicate]
    );
    // The same id for another consumer is another delivery.
    let bulk = Bulk(AtomicUsize::new(0));
    assert_eq!(
        inbox.deliver(&bulk as &Any<'_>, &once).unwrap(),
        Outcome::Applied
    );
    assert_eq!(sum(&inbox), 10);
    assert_eq!(inbox_rows(inbox.connection()), 2);
}

#[test]
fn a_failure_leaves_nothing_behind_and_applies_on_redelivery() {
    let mut inbox = inbox(3);
    inbox
        .connection()
        .execute("INSERT INTO outage VALUES (1)", [])
        .unwrap();
    let flaky = message("m-7", 7);
    let later = message("m-2", 2);
    let first =
        inbox.deliver_batch(&[Delivery::new(CREDIT, &flaky), Delivery::new(CREDIT, &later)]);
    let first = first.unwrap();
    assert!(failed(&first[0]), "{first:?}");
    assert_eq!(
        first[1],
        Outcome::Applied,
        "a failure fails only its own delivery"
    );
    assert_eq!((sum(&inbox), inbox_rows(inbox.connection())), (2, 1));
    assert_eq!(inbox.failures("credit", "m-7").unwrap(), 1);

    inbox
        .connection()
        .execute("DELETE FROM outage", [])
        .unwrap();
    let mut again = Delivery::new(CREDIT, &flaky);
    again.delivered = 2;
    assert_eq!(inbox.deliver_batch(&[again]).unwrap(), [Outcome::Applied]);
    assert_eq!(inbox.deliver(CREDIT, &flaky).unwrap(), Outcome::Duplicate);
    assert_eq!(sum(&inbox), 9);
}

#[test]
fn a_message_that_keeps_failing_is_dead_lettered_at_its_last_attempt() {
    let mut inbox = inbox(3);
    let bad = message("m-bad", -4);
    let outcomes: Vec<Outcome> = (1..=3)
        .map(|delivered| {
            let mut delivery = Delivery::new(CREDIT, &bad);
            delivery.delivered = delivered;
            inbox.deliver_batch(&[delivery]).unwrap().remove(0)
        })
        .collect();
    assert!(failed(&outcomes[0]) && failed(&outcomes[1]), "{outcomes:?}");
    assert_eq!(outcomes[2], Outcome::DeadLettered("cannot add -4".into()));
    assert_eq!(
        inbox.failures("credit", "m-bad").unwrap(),
        0,
        "forgotten once dead"
    );
    let dead = inbox.dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    let letter = &dead[0];
    assert_eq!(
        (letter.consumer.as_str(), letter.message_id.as_str()),
        ("credit", "m-bad")
    );
    assert_eq!(
        (letter.event_type.as_str(), letter.payload.as_str()),
        ("Amount", "-4")
    );
    assert_eq!((letter.attempts, letter.refused), (3, false));
    assert_eq!(letter.error, "cannot add -4");
    assert_eq!(inbox.deliver(CREDIT, &bad).unwrap(), Outcome::Duplicate);
    assert_eq!(sum(&inbox), 0, "no failed attempt's write survived");
}

#[test]
fn a_refused_message_is_dead_lettered_at_once() {
    let mut inbox = inbox(3);
    let refused = message("m-0", 0);
    assert_eq!(
        inbox.deliver(CREDIT, &refused).unwrap(),
        Outcome::Refused("nothing to add".into())
    );
    let dead = inbox.dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].attempts, dead[0].refused), (1, true));
    assert_eq!(inbox.deliver(CREDIT, &refused).unwrap(), Outcome::Duplicate);
}

#[test]
fn a_panic_fails_only_its_delivery() {
    let mut inbox = inbox(3);
    let (unlucky, fine) = (message("m-13", 13), message("m-3", 3));
    let outcomes = inbox
        .deliver_batch(&[
            Delivery::new(CREDIT, &unlucky),
            Delivery::new(CREDIT, &fine),
        ])
        .unwrap();
    assert!(
        matches!(&outcomes[0], Outcome::Failed(why) if why.contains("unlucky amount")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], Outcome::Applied);
    assert_eq!(sum(&inbox), 3);
}

#[test]
fn a_delivery_past_its_attempts_is_parked_without_running_its_handler() {
    let mut inbox = inbox(3);
    let crashing = message("m-9", 9);
    let mut delivery = Delivery::new(CREDIT, &crashing);
    delivery.delivered = 4;
    let outcome = inbox.deliver_batch(&[delivery]).unwrap().remove(0);
    assert!(
        matches!(&outcome, Outcome::DeadLettered(why) if why.contains("delivered 4 times")),
        "{outcome:?}"
    );
    assert_eq!(sum(&inbox), 0);
    assert_eq!(
        inbox.deliver(CREDIT, &crashing).unwrap(),
        Outcome::Duplicate
    );
}

#[test]
fn a_set_based_run_applies_together_and_falls_back_one_at_a_time() {
    let mut inbox = inbox(3);
    let bulk = Bulk(AtomicUsize::new(0));
    let bulk_handler: &Any<'_> = &bulk;
    let (a, b, c) = (message("a", 1), message("b", 2), message("c", 4));
    let run = |inbox: &mut SqliteInbox<Stand>, messages: &[&Message<i64>]| {
        let batch: Vec<_> = messages
            .iter()
            .map(|m| Delivery::new(bulk_handler, *m))
            .collect();
        inbox.deliver_batch(&batch).unwrap()
    };
    assert_eq!(
        run(&mut inbox, &[&a, &b]),
        [Outcome::Applied, Outcome::Applied]
    );
    assert_eq!((bulk.0.load(Ordering::SeqCst), sum(&inbox)), (1, 3));
    // Duplicates inside a run are told apart from the new ones.
    assert_eq!(
        run(&mut inbox, &[&a, &b, &c]),
        [Outcome::Duplicate, Outcome::Duplicate, Outcome::Applied]
    );
    assert_eq!(sum(&inbox), 7);
    // One bad delivery: the run is rolled back and each goes alone.
    let (d, bad, e) = (message("d", 8), message("bad", -1), message("e", 16));
    let outcomes = run(&mut inbox, &[&d, &bad, &e]);
    assert_eq!(outcomes[0], Outcome::Applied);
    assert!(failed(&outcomes[1]), "{outcomes:?}");
    assert_eq!(outcomes[2], Outcome::Applied);
    assert_eq!(sum(&inbox), 31);
    assert_eq!(inbox_rows(inbox.connection()), 5);
}

#[test]
fn a_redrive_applies_a_dead_letter_once_it_can() {
    let mut inbox = inbox(1);
    inbox
        .connection()
        .execute("INSERT INTO outage VALUES (1)", [])
        .unwrap();
    let flaky = message("m-7", 7);
    let outcome = inbox.deliver(CREDIT, &flaky).unwrap();
    assert!(matches!(outcome, Outcome::DeadLettered(_)), "{outcome:?}");
    let again = inbox.redrive(CREDIT, &flaky).unwrap();
    assert!(failed(&again), "{again:?}");
    assert_eq!(
        inbox.dead_letters().unwrap().len(),
        1,
        "kept while it fails"
    );

    inbox
        .connection()
        .execute("DELETE FROM outage", [])
        .unwrap();
    assert_eq!(inbox.redrive(CREDIT, &flaky).unwrap(), Outcome::Applied);
    assert!(inbox.dead_letters().unwrap().is_empty());
    assert_eq!(inbox.deliver(CREDIT, &flaky).unwrap(), Outcome::Duplicate);
    assert_eq!(sum(&inbox), 7);
}

/// 4 workers, each on a connection of its own to one file, each given all
/// 50 messages in batches of 10 (each worker in another order): every
/// message is applied by exactly one of them. (Amounts above 100: each
/// one is simply added.)
#[test]
fn parallel_workers_apply_each_message_once() {
    const WORKERS: usize = 4;
    const MESSAGES: i64 = 50;
    let folder = tempfile::tempdir().expect("temporary folder");
    let path = folder.path().join("inbox.db");
    let db = Connection::open(&path).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    prepare(&db);
    let messages: Vec<Message<i64>> = (1..=MESSAGES)
        .map(|n| message(&format!("m-{n}"), 100 + n))
        .collect();
    let applied: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let (path, messages) = (&path, &messages);
                scope.spawn(move || {
                    let db = Connection::open(path).unwrap();
                    db.busy_timeout(std::time::Duration::from_secs(60)).unwrap();
                    let mut inbox = SqliteInbox::<Stand>::new(db, Policy { max_attempts: 3 });
                    let mut order: Vec<&Message<i64>> = messages.iter().collect();
                    order.rotate_left(worker * 13);
                    if worker % 2 == 1 {
                        order.reverse();
                    }
                    let mut applied = 0;
                    for batch in order.chunks(10) {
                        let batch: Vec<_> =
                            batch.iter().map(|m| Delivery::new(CREDIT, *m)).collect();
                        let outcomes = inbox.deliver_batch(&batch).expect("a batch commits");
                        assert!(
                            outcomes
                                .iter()
                                .all(|o| matches!(o, Outcome::Applied | Outcome::Duplicate)),
                            "{outcomes:?}"
                        );
                        applied += outcomes.iter().filter(|o| **o == Outcome::Applied).count();
                    }
                    applied
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .sum()
    });
    assert_eq!(applied, 50);
    assert_eq!(sum_of(&db), 100 * MESSAGES + MESSAGES * (MESSAGES + 1) / 2);
    assert_eq!(inbox_rows(&db), MESSAGES);
}
