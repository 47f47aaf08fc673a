//! Stand-in consumers and the inbox's scenarios, written once and played
//! on each database's inbox (`sqlite_inbox.rs`, `postgres_inbox.rs`).
//!
//! The stand-ins add amounts to one total, and the amount says what they
//! do: above zero they add it; zero is refused; below zero fails after a
//! write that must be rolled back; 13 panics after such a write; 7 fails
//! while the `outage` table has a row. Each scenario checks what the inbox
//! stores (the total, the inbox rows, the dead letters), counts (failures)
//! and reports (one outcome per delivery, in order).

mod pipeline;

pub use pipeline::{
    a_batch_the_database_rolls_back_is_abandoned,
    the_pipeline_settles_each_message_after_its_commit,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use inbox_kit_runtime::delivery::{DeadLetters, Delivery, Inbox};
use inbox_kit_runtime::handler::{Handler, HandlerError, Refused, Registry, SetBased, Subscriber};
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::message::{Message, MessageId};

/// The stand-ins' tables, created beside the inbox's own.
pub const TABLES: &str = "CREATE TABLE total (sum BIGINT NOT NULL);
    INSERT INTO total VALUES (0);
    CREATE TABLE outage (since BIGINT);";

/// What the stand-ins need from their tables.
pub trait Amounts {
    fn add(&mut self, amount: i64) -> Result<(), HandlerError>;
    fn in_outage(&mut self) -> Result<bool, HandlerError>;
}

/// One database under the stand-ins: its inboxes, the stand-ins as its
/// registry holds them, and plain SQL on its tables.
pub trait Database: Sync {
    type Stands: Registry<Event = i64>;
    type Inbox: Inbox<Self::Stands> + DeadLetters<Self::Stands>;

    /// An inbox on a connection of its own.
    fn inbox(&self, max_attempts: u32) -> Self::Inbox;
    /// [`Credit`] as the registry holds it.
    fn credit<'a>() -> &'a <Self::Stands as Registry>::Handler<'a>;
    /// [`Credit`] as a run holds it (the pipeline's handlers).
    fn credit_held() -> Arc<<Self::Stands as Registry>::Handler<'static>>;
    /// Counts the inbox rows of a message id on a connection of its own,
    /// which sees only what was committed.
    fn claims(&self) -> Arc<dyn Fn(&str) -> i64 + Send + Sync>;
    /// [`Bulk`] as the registry holds it.
    fn bulk<'a>(bulk: &'a Bulk) -> &'a <Self::Stands as Registry>::Handler<'a>;
    /// Runs `sql` outside any inbox.
    fn execute(&self, sql: &str);
    /// The single number `sql` selects.
    fn number(&self, sql: &str) -> i64;
    /// Makes the database refuse every inbox row for `message_id` (a
    /// trigger raising an error that is not a duplicate key), or, with
    /// `None`, stop refusing.
    fn refuse_claims_of(&self, message_id: Option<&str>);
}

/// One amount, as the stand-ins treat it (see the module doc).
fn apply_amount<T: Amounts + ?Sized>(total: &mut T, amount: i64) -> Result<(), HandlerError> {
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
pub struct Credit;

/// Adds amounts, many at once when it can; counts its set-based runs.
#[derive(Default)]
pub struct Bulk(AtomicUsize);

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

impl<T: Amounts + ?Sized> Handler<i64, T> for Credit {
    fn apply(&self, total: &mut T, message: &Message<i64>) -> Result<(), HandlerError> {
        apply_amount(total, message.event)
    }
}

impl<T: Amounts + ?Sized> Handler<i64, T> for Bulk {
    fn apply(&self, total: &mut T, message: &Message<i64>) -> Result<(), HandlerError> {
        apply_amount(total, message.event)
    }
    fn set_based(&self) -> Option<&dyn SetBased<i64, T>> {
        Some(self)
    }
}

impl<T: Amounts + ?Sized> SetBased<i64, T> for Bulk {
    fn apply_all(&self, total: &mut T, messages: &[&Message<i64>]) -> Result<(), HandlerError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        if messages.iter().any(|message| message.event <= 0) {
            total.add(1000)?;
            return Err("one of them cannot be added".into());
        }
        total.add(messages.iter().map(|message| message.event).sum())
    }
}

/// What an amount is about: equal amounts go to one worker, in order.
pub fn partition_key(amount: &i64) -> u64 {
    amount.unsigned_abs()
}

/// The stand-ins' wire form, for dead letters.
pub fn encode(amount: &i64) -> (&'static str, String) {
    ("Amount", amount.to_string())
}

pub fn message(id: &str, amount: i64) -> Message<i64> {
    Message {
        id: MessageId::new(id).expect("a valid id"),
        event: amount,
        trace_parent: None,
    }
}

fn sum(db: &impl Database) -> i64 {
    db.number("SELECT sum FROM total")
}

fn inbox_rows(db: &impl Database) -> i64 {
    db.number("SELECT count(*) FROM inbox")
}

fn failed(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Failed(_))
}

/// The `delivered`-th delivery of `message` to `handler`, alone.
fn deliver_nth<'a, D: Database>(
    inbox: &mut D::Inbox,
    handler: &'a <D::Stands as Registry>::Handler<'a>,
    message: &'a Message<i64>,
    delivered: u32,
) -> Outcome {
    let mut delivery = Delivery::<D::Stands>::new(handler, message);
    delivery.delivered = delivered;
    let mut outcomes = inbox.deliver_batch(&[delivery]).expect("the batch commits");
    assert_eq!(outcomes.len(), 1, "one outcome per delivery");
    outcomes.remove(0)
}

pub fn a_delivery_applies_once_however_often_it_arrives<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let once = message("m-1", 5);
    let outcomes: Vec<Outcome> = (0..3)
        .map(|_| inbox.deliver(D::credit(), &once).unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [Outcome::Applied, Outcome::Duplicate, Outcome::Duplicate]
    );
    // The same id for another consumer is another delivery.
    let bulk = Bulk::default();
    assert_eq!(
        inbox.deliver(D::bulk(&bulk), &once).unwrap(),
        Outcome::Applied
    );
    assert_eq!((sum(db), inbox_rows(db)), (10, 2));
}

pub fn a_failure_leaves_nothing_behind_and_applies_on_redelivery<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    db.execute("INSERT INTO outage VALUES (1)");
    let (flaky, later) = (message("m-7", 7), message("m-2", 2));
    let first = inbox
        .deliver_batch(&[
            Delivery::new(D::credit(), &flaky),
            Delivery::new(D::credit(), &later),
        ])
        .unwrap();
    assert!(failed(&first[0]), "{first:?}");
    assert_eq!(
        first[1],
        Outcome::Applied,
        "a failure fails only its own delivery"
    );
    assert_eq!((sum(db), inbox_rows(db)), (2, 1));
    assert_eq!(inbox.failures("credit", "m-7").unwrap(), 1);

    db.execute("DELETE FROM outage");
    assert_eq!(
        deliver_nth::<D>(&mut inbox, D::credit(), &flaky, 2),
        Outcome::Applied
    );
    assert_eq!(
        inbox.deliver(D::credit(), &flaky).unwrap(),
        Outcome::Duplicate
    );
    assert_eq!(sum(db), 9);
}

/// A copy of a failing message later in the same batch gets its own try.
pub fn a_later_copy_in_the_batch_applies_after_a_failure<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    db.execute("INSERT INTO outage VALUES (1)");
    let flaky = message("m-7", 7);
    let outcomes = inbox
        .deliver_batch(&[
            Delivery::new(D::credit(), &flaky),
            Delivery::new(D::credit(), &flaky),
        ])
        .unwrap();
    assert!(failed(&outcomes[0]) && failed(&outcomes[1]), "{outcomes:?}");
    assert_eq!(inbox.failures("credit", "m-7").unwrap(), 2);
    db.execute("DELETE FROM outage");
    let (other, flaky_again) = (message("m-5", 5), message("m-7", 7));
    let outcomes = inbox
        .deliver_batch(&[
            Delivery::new(D::credit(), &other),
            Delivery::new(D::credit(), &flaky_again),
            Delivery::new(D::credit(), &flaky_again),
        ])
        .unwrap();
    assert_eq!(
        outcomes,
        [Outcome::Applied, Outcome::Applied, Outcome::Duplicate]
    );
    assert_eq!((sum(db), inbox_rows(db)), (12, 2));
}

pub fn a_message_that_keeps_failing_is_dead_lettered_at_its_last_attempt<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let bad = message("m-bad", -4);
    let outcomes: Vec<Outcome> = (1..=2)
        .map(|delivered| deliver_nth::<D>(&mut inbox, D::credit(), &bad, delivered))
        .collect();
    assert!(failed(&outcomes[0]) && failed(&outcomes[1]), "{outcomes:?}");
    assert_eq!(inbox.failures("credit", "m-bad").unwrap(), 2);
    assert!(
        inbox.dead_letters().unwrap().is_empty(),
        "not dead before the last"
    );
    assert_eq!(
        deliver_nth::<D>(&mut inbox, D::credit(), &bad, 3),
        Outcome::DeadLettered("cannot add -4".into())
    );
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
    assert_eq!(
        inbox.deliver(D::credit(), &bad).unwrap(),
        Outcome::Duplicate
    );
    assert_eq!(sum(db), 0, "no failed attempt's write survived");
}

pub fn a_refused_message_is_dead_lettered_at_once<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let refused = message("m-0", 0);
    assert_eq!(
        inbox.deliver(D::credit(), &refused).unwrap(),
        Outcome::Refused("nothing to add".into())
    );
    let dead = inbox.dead_letters().unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].attempts, dead[0].refused), (1, true));
    assert_eq!(dead[0].error, "nothing to add");
    assert_eq!(
        inbox.deliver(D::credit(), &refused).unwrap(),
        Outcome::Duplicate
    );
    assert_eq!(inbox_rows(db), 1);
}

pub fn a_panic_fails_only_its_delivery<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let (unlucky, fine) = (message("m-13", 13), message("m-3", 3));
    let outcomes = inbox
        .deliver_batch(&[
            Delivery::new(D::credit(), &unlucky),
            Delivery::new(D::credit(), &fine),
        ])
        .unwrap();
    assert!(
        matches!(&outcomes[0], Outcome::Failed(why) if why.contains("unlucky amount")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], Outcome::Applied);
    assert_eq!((sum(db), inbox_rows(db)), (3, 1));
}

pub fn a_delivery_past_its_attempts_is_parked_unrun<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let crashing = message("m-9", 9);
    let outcome = deliver_nth::<D>(&mut inbox, D::credit(), &crashing, 4);
    assert!(
        matches!(&outcome, Outcome::DeadLettered(why) if why.contains("delivered 4 times")),
        "{outcome:?}"
    );
    assert_eq!(inbox.dead_letters().unwrap()[0].attempts, 4);
    assert_eq!(sum(db), 0);
    assert_eq!(
        inbox.deliver(D::credit(), &crashing).unwrap(),
        Outcome::Duplicate
    );
    // At its last attempt, not past it, it still runs.
    let last = message("m-10", 10);
    assert_eq!(
        deliver_nth::<D>(&mut inbox, D::credit(), &last, 3),
        Outcome::Applied
    );
}

/// A delivery past its attempts is parked unrun even among deliveries
/// that go through a set-based run together.
pub fn a_delivery_past_its_attempts_is_parked_even_beside_a_set_based_run<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let bulk = Bulk::default();
    let (a, crashing, c) = (message("a", 1), message("crashing", 2), message("c", 4));
    let mut past = Delivery::<D::Stands>::new(D::bulk(&bulk), &crashing);
    past.delivered = 4;
    let outcomes = inbox
        .deliver_batch(&[
            Delivery::new(D::bulk(&bulk), &a),
            past,
            Delivery::new(D::bulk(&bulk), &c),
        ])
        .unwrap();
    assert_eq!(outcomes[0], Outcome::Applied);
    assert!(
        matches!(&outcomes[1], Outcome::DeadLettered(why) if why.contains("delivered 4 times")),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[2], Outcome::Applied);
    assert_eq!((sum(db), inbox_rows(db)), (5, 3));
    assert_eq!(inbox.dead_letters().unwrap().len(), 1);
}

pub fn a_set_based_run_applies_together_and_falls_back_one_at_a_time<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    let bulk = Bulk::default();
    let run = |inbox: &mut D::Inbox, messages: &[&Message<i64>]| {
        let batch: Vec<_> = messages
            .iter()
            .map(|message| Delivery::<D::Stands>::new(D::bulk(&bulk), message))
            .collect();
        inbox.deliver_batch(&batch).unwrap()
    };
    let (a, b, c) = (message("a", 1), message("b", 2), message("c", 4));
    assert_eq!(
        run(&mut inbox, &[&a, &b]),
        [Outcome::Applied, Outcome::Applied]
    );
    assert_eq!((bulk.0.load(Ordering::SeqCst), sum(db)), (1, 3));
    // Duplicates inside a run are told apart from the new ones.
    assert_eq!(
        run(&mut inbox, &[&a, &b, &c]),
        [Outcome::Duplicate, Outcome::Duplicate, Outcome::Applied]
    );
    assert_eq!(sum(db), 7);
    // One bad delivery: the run is rolled back and each goes alone.
    let (d, bad, e) = (message("d", 8), message("bad", -1), message("e", 16));
    let outcomes = run(&mut inbox, &[&d, &bad, &e]);
    assert_eq!(outcomes[0], Outcome::Applied);
    assert!(failed(&outcomes[1]), "{outcomes:?}");
    assert_eq!(outcomes[2], Outcome::Applied);
    assert_eq!((sum(db), inbox_rows(db)), (31, 5));
    assert_eq!(inbox.failures("bulk", "bad").unwrap(), 1);
}

pub fn a_redrive_applies_a_dead_letter_once_it_can<D: Database>(db: &D) {
    let mut inbox = db.inbox(1);
    db.execute("INSERT INTO outage VALUES (1)");
    let flaky = message("m-7", 7);
    let outcome = inbox.deliver(D::credit(), &flaky).unwrap();
    assert!(matches!(outcome, Outcome::DeadLettered(_)), "{outcome:?}");
    let again = inbox.redrive(D::credit(), &flaky).unwrap();
    assert!(failed(&again), "{again:?}");
    assert_eq!(
        inbox.dead_letters().unwrap().len(),
        1,
        "kept while it fails"
    );
    assert_eq!(
        inbox.deliver(D::credit(), &flaky).unwrap(),
        Outcome::Duplicate
    );

    db.execute("DELETE FROM outage");
    assert_eq!(
        inbox.redrive(D::credit(), &flaky).unwrap(),
        Outcome::Applied
    );
    assert!(inbox.dead_letters().unwrap().is_empty());
    assert_eq!(
        inbox.deliver(D::credit(), &flaky).unwrap(),
        Outcome::Duplicate
    );
    assert_eq!((sum(db), inbox_rows(db)), (7, 1));
}

/// A claim the database refuses for another reason than a duplicate key
/// is neither a duplicate nor a failure of the message: the batch is
/// reported as not committed, and the message applies once the database
/// takes it.
pub fn a_claim_the_database_refuses_is_no_duplicate<D: Database>(db: &D) {
    let mut inbox = db.inbox(3);
    db.refuse_claims_of(Some("m-x"));
    let refused = message("m-x", 5);
    let error = inbox
        .deliver(D::credit(), &refused)
        .expect_err("the claim was refused");
    assert!(!error.to_string().is_empty());
    assert_eq!((sum(db), inbox_rows(db)), (0, 0));
    assert_eq!(
        inbox.failures("credit", "m-x").unwrap(),
        0,
        "not the message's fault"
    );
    db.refuse_claims_of(None);
    assert_eq!(
        inbox.deliver(D::credit(), &refused).unwrap(),
        Outcome::Applied
    );
    assert_eq!(sum(db), 5);
}

/// 4 workers, each on a connection of its own, each given all 50 messages
/// in batches of 10 (each worker in another order): every message is
/// applied by exactly one of them. (Amounts above 100: each one is simply
/// added.)
pub fn parallel_workers_apply_each_message_once<D: Database>(db: &D) {
    const WORKERS: usize = 4;
    const MESSAGES: i64 = 50;
    let messages: Vec<Message<i64>> = (1..=MESSAGES)
        .map(|n| message(&format!("m-{n}"), 100 + n))
        .collect();
    let applied: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let messages = &messages;
                scope.spawn(move || {
                    let mut inbox = db.inbox(3);
                    let mut order: Vec<&Message<i64>> = messages.iter().collect();
                    order.rotate_left(worker * 13);
                    if worker % 2 == 1 {
                        order.reverse();
                    }
                    let mut applied = 0;
                    for batch in order.chunks(10) {
                        let batch: Vec<_> = batch
                            .iter()
                            .map(|message| Delivery::<D::Stands>::new(D::credit(), message))
                            .collect();
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
    assert_eq!(sum(db), 100 * MESSAGES + MESSAGES * (MESSAGES + 1) / 2);
    assert_eq!(inbox_rows(db), MESSAGES);
}

/// One test per scenario above, each on a database of its own
/// (`$database` is evaluated in each test).
macro_rules! every_scenario {
    ($database:expr) => {
        every_scenario!(@tests $database;
            a_delivery_applies_once_however_often_it_arrives,
            a_failure_leaves_nothing_behind_and_applies_on_redelivery,
            a_later_copy_in_the_batch_applies_after_a_failure,
            a_message_that_keeps_failing_is_dead_lettered_at_its_last_attempt,
            a_refused_message_is_dead_lettered_at_once,
            a_panic_fails_only_its_delivery,
            a_delivery_past_its_attempts_is_parked_unrun,
            a_delivery_past_its_attempts_is_parked_even_beside_a_set_based_run,
            a_set_based_run_applies_together_and_falls_back_one_at_a_time,
            a_redrive_applies_a_dead_letter_once_it_can,
            a_claim_the_database_refuses_is_no_duplicate,
            parallel_workers_apply_each_message_once,
            the_pipeline_settles_each_message_after_its_commit,
            a_batch_the_database_rolls_back_is_abandoned,
        );
    };
    (@tests $database:expr; $($scenario:ident,)*) => {
        $(
            #[test]
            fn $scenario() {
                stand_ins::$scenario(&$database);
            }
        )*
    };
}
