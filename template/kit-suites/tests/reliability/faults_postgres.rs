//! Database faults on PostgreSQL: the server kills the worker's connection
//! in the middle of a batch, or a lock or statement timeout fires. Each
//! fails the whole batch with a clear error; nothing is recorded, so
//! nothing may be acknowledged, and nothing counts as a failed attempt of
//! the message; the inbox reconnects and the same deliveries then apply
//! exactly once.

use std::sync::Arc;

use {{crate_name}}::database::{Exec, PgInbox};
use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, Subscriber};
use {{crate_name}}::handlers::{CHANNELS, Debit, Notification, Tables};
use {{crate_name}}::inbox::{DeadLetters, Delivery, Inbox, Outcome, Policy};
use {{crate_name}}::message::Message;
use {{crate_name}}::progress::Progress;
use {{crate_name}}::relay::lines::LinesSink;
use {{crate_name}}::relay::{Queue, RelayPolicy, relay_batch};
use {{crate_name}}::store::Store;

use crate::support::database::{Fixture, SLOT_TABLE_BYTES, server_url};
use crate::support::debit_variant::DebitVariant;
use crate::support::harness::{RealInbox, assert_applied_once, fixture_for, inbox_rows};
use crate::support::subjects::{DebitSubject, payments};

/// Checks that the batch failed as a storage fault and left nothing, not
/// even an open transaction, then that the same deliveries apply once on a
/// second try.
fn fails_cleanly_then_recovers(
    fixture: &Fixture,
    inbox: &mut PgInbox,
    deliveries: &[Delivery<'_>],
    expected_error: &str,
    fix_it: impl FnOnce(),
) {
    let subject = DebitSubject::real();
    let error = inbox.deliver_batch(deliveries).unwrap_err();
    assert!(error.is_storage_fault(), "{error}");
    assert!(
        error.to_string().contains(expected_error),
        "unclear error: {error}"
    );
    assert_outside_any_transaction(fixture, inbox);
    assert_eq!(inbox_rows(fixture, "debit"), 0, "nothing recorded");
    assert_applied_once(fixture, &subject, &[]);
    let mut reader = fixture.database().inbox(Policy::default()).unwrap();
    assert_eq!(
        reader.failures("debit", "pay-00001").unwrap(),
        0,
        "a storage fault is not the message's fault"
    );

    fix_it();
    let outcomes = inbox.deliver_batch(deliveries).unwrap();
    assert!(
        outcomes.iter().all(|o| *o == Outcome::Applied),
        "{outcomes:?}"
    );
    let messages: Vec<Message> = deliveries.iter().map(|d| d.message.clone()).collect();
    assert_applied_once(fixture, &subject, &messages);
    assert_eq!(inbox_rows(fixture, "debit"), messages.len());
}

/// Checks that the inbox's connection is idle outside any transaction: a
/// failed batch must end its own, or its locks (the claimed inbox rows, the
/// debited accounts) would be held until the next batch, however late.
fn assert_outside_any_transaction(fixture: &Fixture, inbox: &mut PgInbox) {
    let backend: i32 = inbox
        .client()
        .unwrap()
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("the failed batch left its connection in an aborted transaction")
        .get(0);
    let state: String = fixture
        .database()
        .connect()
        .unwrap()
        .query_one(
            "SELECT state FROM pg_stat_activity WHERE pid = $1",
            &[&backend],
        )
        .unwrap()
        .get(0);
    assert_eq!(state, "idle", "the failed batch left its transaction open");
}

/// `debit`, except that before applying the chosen message it has the
/// server terminate the connection the delivery runs on.
struct KillsItsConnection {
    backend: i32,
    at: String,
    done: std::sync::atomic::AtomicBool,
}

impl Subscriber<Event> for KillsItsConnection {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for KillsItsConnection {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        if message.id.as_str() == self.at
            && !self.done.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let mut admin = postgres::Client::connect(&server_url(), postgres::NoTls)?;
            admin.execute("SELECT pg_terminate_backend($1)", &[&self.backend])?;
        }
        Debit.apply(tables, message)
    }
}

#[test]
fn a_connection_killed_mid_batch_fails_the_batch_and_the_inbox_reconnects() {
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let mut inbox = fixture.database().inbox(Policy::default()).unwrap();
    let backend: i32 = inbox
        .client()
        .unwrap()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let killer = Arc::new(KillsItsConnection {
        backend,
        at: "pay-00150".into(),
        done: Default::default(),
    });
    let messages = payments(300);
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery::new(killer.as_ref(), message))
        .collect();
    fails_cleanly_then_recovers(
        &fixture,
        &mut inbox,
        &deliveries,
        "database unavailable",
        || {},
    );
}

fn lock_the_account_then(timeout: &str, expected_error: &str) {
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let mut inbox = fixture.database().inbox(Policy::default()).unwrap();
    inbox.client().unwrap().batch_execute(timeout).unwrap();
    let mut holder = fixture.database().connect().unwrap();
    holder
        .batch_execute("BEGIN; SELECT * FROM accounts FOR UPDATE;")
        .unwrap();
    let messages = payments(50);
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery::new(&Debit, message))
        .collect();
    fails_cleanly_then_recovers(&fixture, &mut inbox, &deliveries, expected_error, || {
        holder.batch_execute("ROLLBACK").unwrap()
    });
}

#[test]
fn a_lock_timeout_fails_the_batch_and_the_next_one_applies() {
    lock_the_account_then("SET lock_timeout = '200ms'", "database unavailable");
}

#[test]
fn a_statement_timeout_fails_the_batch_and_the_next_one_applies() {
    lock_the_account_then("SET statement_timeout = '200ms'", "database unavailable");
}

/// The inbox's connection sends what it deferred before the next
/// statement, in order, and reports a deferred statement's error.
#[test]
fn deferred_statements_run_first_in_order_and_their_errors_are_reported() {
    let fixture = Fixture::new();
    let mut connection = fixture.database().connect_pipelined().unwrap();
    connection.begin();
    connection.defer("CREATE TEMP TABLE deferred (step int) ON COMMIT DROP");
    connection.defer("INSERT INTO deferred VALUES (1)");
    connection
        .execute(
            "INSERT INTO deferred SELECT max(step) + 1 FROM deferred",
            &[],
        )
        .unwrap();
    let steps: Vec<i32> = connection
        .query("SELECT step FROM deferred ORDER BY step", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(steps, [1, 2], "the deferred statements ran first, in order");

    connection.defer("SELECT 1 / 0");
    let error = connection.query_one("SELECT 1", &[]).unwrap_err();
    assert_eq!(
        error.code(),
        Some(&postgres::error::SqlState::DIVISION_BY_ZERO),
        "{error}"
    );
    connection.rollback();
}

/// A transaction that an error path left open is rolled back when the
/// next one begins: its writes never commit with the next batch's.
#[test]
fn a_transaction_left_open_is_rolled_back_never_continued() {
    let fixture = Fixture::new();
    let mut connection = fixture.database().connect_pipelined().unwrap();
    let open = "INSERT INTO accounts (id, balance) VALUES ($1, 100)";
    connection.begin();
    connection.execute(open, &[&1_i64]).unwrap();
    connection.begin();
    connection.execute(open, &[&2_i64]).unwrap();
    connection.commit().unwrap();
    let balances = fixture.with_tables(|tables| tables.balances());
    assert_eq!(
        balances,
        [(2, 100)],
        "only the second transaction committed"
    );
}

/// What deferring saves, counted rather than timed: a batch of new
/// payments through the debit's set-based path costs three round trips
/// (`BEGIN` with the claim, the savepoint with the debit, `COMMIT`), and
/// the same batch again, all duplicates, one (the claim: a transaction
/// that wrote nothing does not wait for its `COMMIT`). That `COMMIT` still
/// goes out at once rather than with the next batch: an open transaction
/// would hold its lock on the inbox however long the consumer waits for
/// messages, and lock out every `TRUNCATE`, `ALTER` or migration of it.
#[test]
fn a_batch_waits_only_for_the_statements_whose_answers_it_needs() {
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let mut inbox = fixture.database().inbox(Policy::default()).unwrap();
    let messages = payments(10);
    let deliveries: Vec<_> = messages
        .iter()
        .map(|message| Delivery::new(&Debit, message))
        .collect();
    for (expected_outcome, expected_round_trips) in [(Outcome::Applied, 3), (Outcome::Duplicate, 1)]
    {
        let before = inbox.client().unwrap().round_trips();
        let outcomes = inbox.deliver_batch(&deliveries).unwrap();
        let round_trips = inbox.client().unwrap().round_trips() - before;
        assert!(
            outcomes.iter().all(|outcome| *outcome == expected_outcome),
            "{outcomes:?}"
        );
        assert_eq!(round_trips, expected_round_trips, "{expected_outcome:?}");
        assert_no_transaction_holds(&fixture, "inbox");
    }
    assert_applied_once(&fixture, &DebitSubject::real(), &messages);
}

/// Takes `table`'s exclusive lock from another session, waiting at most
/// `lock_timeout` (far longer than a `COMMIT` sent without waiting takes
/// to arrive): it fails if a transaction that touched the table is still
/// open.
fn assert_no_transaction_holds(fixture: &Fixture, table: &str) {
    let mut other = fixture.database().connect_pipelined().unwrap();
    other.begin();
    other
        .batch_execute(&format!(
            "SET LOCAL lock_timeout = '30s'; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
        ))
        .unwrap_or_else(|error| {
            panic!("a transaction was left open, holding its lock on {table}: {error}")
        });
    other.rollback();
}

/// The relay's round trips, counted: a batch costs three (`BEGIN` with the
/// take, the mark, `COMMIT`), and a take that finds nothing one (its
/// transaction locked nothing, so it ends without waiting for the answer,
/// yet at once: the table's lock is free while the relay waits).
#[test]
fn a_relay_batch_waits_only_for_its_take_its_mark_and_its_commit() {
    let fixture = Fixture::new();
    fixture.with_tables(|tables| {
        (0..10).try_for_each(|row| {
            tables.queue_notification(&Notification {
                event_id: format!("e-{row}"),
                channel: CHANNELS[row % CHANNELS.len()].to_owned(),
                account: 1,
                body: "payment captured".to_owned(),
                trace_parent: None,
            })
        })
    });
    let mut queue = fixture.database().relay_queue().unwrap();
    let mut sink = LinesSink::new(Box::new(std::io::sink()));
    for (expected_sent, expected_round_trips) in [(10, 3), (0, 1)] {
        let before = queue.client().round_trips();
        let counts = relay_batch(
            &mut queue,
            &mut sink,
            100,
            RelayPolicy::default(),
            &Progress::default(),
        )
        .unwrap();
        assert_eq!(counts.sent, expected_sent);
        let round_trips = queue.client().round_trips() - before;
        assert_eq!(round_trips, expected_round_trips, "{counts}");
        assert_no_transaction_holds(&fixture, "notifications");
    }
    assert_eq!(queue.remaining().unwrap(), 0);
}

/// `debit`, except that it swallows the error of its own statement and
/// reports success: a handler bug. The statement's error has aborted the
/// transaction, so PostgreSQL answers the batch's `COMMIT` with a rollback
/// (and no error).
const SWALLOWS_ITS_ERROR: DebitVariant = DebitVariant {
    apply: |tables, message| {
        let _ = Debit.apply(tables, message);
        Ok(())
    },
    set_based: None,
};

/// A batch whose transaction was aborted behind the inbox's back (a
/// handler that swallowed its statement's error) never reports its
/// deliveries applied: the `COMMIT` that PostgreSQL turns into a rollback
/// would otherwise have them acknowledged and lost.
#[test]
fn a_commit_the_server_turned_into_a_rollback_reports_nothing_applied() {
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let mut inbox = fixture.database().inbox(Policy::default()).unwrap();
    inbox
        .client()
        .unwrap()
        .batch_execute("SET lock_timeout = '200ms'")
        .unwrap();
    let mut holder = fixture.database().connect().unwrap();
    holder
        .batch_execute("BEGIN; SELECT * FROM accounts FOR UPDATE;")
        .unwrap();
    let messages = payments(1);
    let swallowed = [Delivery::new(&SWALLOWS_ITS_ERROR, &messages[0])];
    let verdict = inbox.deliver_batch(&swallowed);
    holder.batch_execute("ROLLBACK").unwrap();
    let error = verdict.expect_err("a rolled-back batch was reported as applied");
    assert!(
        error.to_string().contains("nothing was committed")
            && error.to_string().contains("swallow"),
        "unclear error: {error}"
    );
    assert_outside_any_transaction(&fixture, &mut inbox);
    assert_eq!(inbox_rows(&fixture, "debit"), 0, "nothing recorded");
    let outcomes = inbox
        .deliver_batch(&[Delivery::new(&Debit, &messages[0])])
        .unwrap();
    assert_eq!(outcomes, [Outcome::Applied]);
    assert_applied_once(&fixture, &DebitSubject::real(), &messages);
}

/// A fixture never inherits its slot's last scenario's bulk. A server may
/// run without autovacuum (this machine's does), and a table emptied with
/// `DELETE` keeps every dead row, which every later scan of it reads:
/// slots that lived through a benchmark made the relay four times slower
/// and the suite slower with every run.
#[test]
fn a_fresh_fixture_is_small_however_much_the_last_one_wrote() {
    let bulky = Fixture::new();
    bulky
        .database()
        .connect()
        .unwrap()
        .batch_execute(
            "INSERT INTO notifications (event_id, channel, account, body)
             SELECT g::text, 'email', 1, repeat('x', 100) FROM generate_series(1, 20000) g",
        )
        .unwrap();
    drop(bulky);
    let fresh = Fixture::new();
    let (table, bytes): (String, i64) = fresh
        .database()
        .connect()
        .unwrap()
        .query_one(
            "SELECT tablename::text, pg_total_relation_size(format('%I', tablename)::regclass)
             FROM pg_tables WHERE schemaname = current_schema() ORDER BY 2 DESC LIMIT 1",
            &[],
        )
        .map(|row| (row.get(0), row.get(1)))
        .unwrap();
    assert!(
        bytes <= SLOT_TABLE_BYTES,
        "{table} takes {bytes} bytes in a fresh fixture"
    );
}
