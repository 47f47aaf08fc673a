//! The required tests for the order consumers, written before the retrofit
//! and run unchanged against the dispatcher as found and against the
//! retrofit (`--features retrofitted`). Each test plays the broker: an
//! error from `dispatch` is a nack, and the test redelivers. They judge the
//! business state (revenue, invoices, shipments) and the answers only.
//!
//! Run twice, parallel and failure then redelivery are written for one
//! consumer, `Billing`, as they would be for each consumer on its own;
//! only the two-consumers test delivers one order to both.

use std::path::{Path, PathBuf};
use std::sync::Barrier;

use corpus_key_without_consumer::{
    BUSINESS_SCHEMA, Billing, Consumer, OrderPlaced, Shipping, dead_letters, dispatch, migrate,
    open, skipped_messages,
};
use rusqlite::Connection;
use tempfile::TempDir;

const TOTAL: i64 = 30;

fn orders(count: usize) -> Vec<OrderPlaced> {
    (0..count)
        .map(|i| OrderPlaced {
            message_id: format!("ord-{i:02}"),
            order_id: i as i64,
            total: TOTAL,
        })
        .collect()
}

fn ids<'a>(orders: impl IntoIterator<Item = &'a OrderPlaced>) -> Vec<String> {
    let mut ids: Vec<String> = orders.into_iter().map(|o| o.message_id.clone()).collect();
    ids.sort();
    ids
}

/// Revenue, invoiced ids and shipped ids, sorted.
type State = (i64, Vec<String>, Vec<String>);

/// The state after billing each of `billed` once and shipping each of
/// `shipped` once.
fn applied_once(billed: &[&OrderPlaced], shipped: &[&OrderPlaced]) -> State {
    (
        TOTAL * billed.len() as i64,
        ids(billed.iter().copied()),
        ids(shipped.iter().copied()),
    )
}

/// A scratch folder in memory where there is one: every commit fsyncs.
fn scratch() -> TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

struct Store {
    _dir: TempDir,
    path: PathBuf,
}

impl Store {
    fn new() -> Self {
        let dir = scratch();
        let path = dir.path().join("orders.db");
        open(&path).unwrap();
        Self { _dir: dir, path }
    }

    fn connect(&self) -> Connection {
        open(&self.path).unwrap()
    }

    fn state(&self) -> State {
        let db = Connection::open(&self.path).unwrap();
        let revenue = db
            .query_row("SELECT total FROM revenue", [], |row| row.get(0))
            .unwrap();
        let column = |query: &str| -> Vec<String> {
            let mut statement = db.prepare(query).unwrap();
            let rows = statement.query_map([], |row| row.get(0)).unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        };
        (
            revenue,
            column("SELECT message_id FROM invoices ORDER BY message_id"),
            column("SELECT message_id FROM shipments ORDER BY message_id"),
        )
    }

    /// From now on, writing the invoice of `order` fails, after the
    /// revenue was booked: billing fails halfway (`RAISE(ABORT)` undoes the
    /// statement only).
    fn break_order(&self, order: &OrderPlaced) {
        Connection::open(&self.path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS failing_orders (message_id TEXT PRIMARY KEY);
                 CREATE TRIGGER IF NOT EXISTS fail_invoice AFTER INSERT ON invoices
                 WHEN NEW.message_id IN (SELECT message_id FROM failing_orders)
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;
                 INSERT INTO failing_orders VALUES ('{}');",
                order.message_id
            ))
            .unwrap();
    }

    fn heal(&self) {
        Connection::open(&self.path)
            .unwrap()
            .execute("DELETE FROM failing_orders", [])
            .unwrap();
    }
}

/// Delivers every order to `consumer`; true where it was acknowledged.
fn deliver_all(db: &mut Connection, consumer: &dyn Consumer, orders: &[OrderPlaced]) -> Vec<bool> {
    orders
        .iter()
        .map(|order| dispatch(db, consumer, order).is_ok())
        .collect()
}

#[test]
fn run_twice_bills_once() {
    let store = Store::new();
    let mut db = store.connect();
    let orders = orders(50);
    let mut acks = deliver_all(&mut db, &Billing, &orders);
    acks.extend(deliver_all(&mut db, &Billing, &orders));
    let all: Vec<&OrderPlaced> = orders.iter().collect();
    assert_eq!(
        (store.state(), acks),
        (applied_once(&all, &[]), vec![true; 100])
    );
}

/// Rounds of the parallel scenario, each on a fresh database, with the
/// workers meeting at a barrier before every message (see the same
/// constant in the check-then-act entry for why one round is not enough).
const ROUNDS: usize = 10;
const WORKERS: usize = 4;

#[test]
fn parallel_workers_bill_once() {
    let orders = orders(50);
    let all: Vec<&OrderPlaced> = orders.iter().collect();
    for round in 1..=ROUNDS {
        let store = Store::new();
        let barrier = Barrier::new(WORKERS);
        let nacks: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let mut db = store.connect();
                    let (barrier, orders) = (&barrier, &orders);
                    scope.spawn(move || {
                        orders
                            .iter()
                            .filter(|order| {
                                barrier.wait();
                                dispatch(&mut db, &Billing, order).is_err()
                            })
                            .count()
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| worker.join().unwrap())
                .sum()
        });
        // A contended lock is not a failure: nothing was nacked.
        assert_eq!(
            (store.state(), nacks),
            (applied_once(&all, &[]), 0),
            "round {round} of {ROUNDS}"
        );
    }
}

#[test]
fn failure_then_redelivery_bills_once() {
    let store = Store::new();
    let mut db = store.connect();
    let orders = orders(10);
    let failing = &orders[3];
    store.break_order(failing);
    let acks = deliver_all(&mut db, &Billing, &orders);
    let others: Vec<&OrderPlaced> = orders
        .iter()
        .filter(|o| o.message_id != failing.message_id)
        .collect();
    assert_eq!(
        (store.state(), acks[3]),
        (applied_once(&others, &[]), false),
        "the failed attempt leaves nothing behind and is nacked"
    );
    store.heal();
    let redelivered = dispatch(&mut db, &Billing, failing).is_ok();
    let all: Vec<&OrderPlaced> = orders.iter().collect();
    assert_eq!(
        (store.state(), redelivered),
        (applied_once(&all, &[]), true),
        "the redelivery bills it, once"
    );
}

#[test]
fn two_consumers_each_apply_once() {
    let store = Store::new();
    let mut db = store.connect();
    let orders = orders(20);
    let mut acks = Vec::new();
    for _ in 0..2 {
        for order in &orders {
            acks.push(dispatch(&mut db, &Billing, order).is_ok());
            acks.push(dispatch(&mut db, &Shipping, order).is_ok());
        }
    }
    let all: Vec<&OrderPlaced> = orders.iter().collect();
    assert_eq!(
        (store.state(), acks),
        (applied_once(&all, &all), vec![true; 80]),
        "one order is billed once and shipped once"
    );
}

#[test]
fn poison_message_is_counted_then_dead_lettered() {
    let store = Store::new();
    let mut db = store.connect();
    let orders = orders(10);
    let poison = &orders[3];
    store.break_order(poison);
    // The broker redelivers a nacked message; the fourth delivery comes
    // after it was parked.
    let acks: Vec<bool> = (0..4)
        .map(|_| dispatch(&mut db, &Billing, poison).is_ok())
        .collect();
    let billing_others = deliver_all(&mut db, &Billing, &orders[4..]);
    // Billing's poison is no business of shipping's.
    let shipped = dispatch(&mut db, &Shipping, poison).is_ok();
    let parked: Vec<_> = dead_letters(&db)
        .unwrap()
        .into_iter()
        .map(|dead| {
            (
                dead.consumer,
                dead.order,
                dead.attempts,
                dead.error.contains("injected failure"),
            )
        })
        .collect();
    let billed: Vec<&OrderPlaced> = orders[4..].iter().collect();
    assert_eq!(
        (acks, billing_others, shipped, parked, store.state()),
        (
            vec![false, false, true, true],
            vec![true; 6],
            true,
            vec![("billing".to_owned(), poison.clone(), 3, true)],
            applied_once(&billed, &[poison]),
        ),
        "two nacks, parked at the third failure, then a duplicate"
    );
}

/// Production as it is before the deploy: every order was recorded once
/// in the shared table and billed, but shipping found the second half
/// already recorded (by billing) and skipped it.
fn production_before_the_retrofit(path: &Path, orders: &[OrderPlaced]) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(BUSINESS_SCHEMA).unwrap();
    db.execute_batch("CREATE TABLE processed (message_id TEXT PRIMARY KEY)")
        .unwrap();
    for (i, order) in orders.iter().enumerate() {
        db.execute(
            "INSERT INTO processed (message_id) VALUES (?1)",
            [&order.message_id],
        )
        .unwrap();
        Billing.apply(&db, order).unwrap();
        if i < orders.len() / 2 {
            Shipping.apply(&db, order).unwrap();
        }
    }
}

#[test]
fn migration_keeps_each_consumers_ids_duplicates() {
    let dir = scratch();
    let path = dir.path().join("orders.db");
    let orders = orders(10);
    production_before_the_retrofit(&path, &orders);
    let mut db = open(&path).unwrap();
    migrate(&mut db).unwrap();
    for order in &orders {
        dispatch(&mut db, &Billing, order).unwrap();
        dispatch(&mut db, &Shipping, order).unwrap();
    }
    let store = Store { _dir: dir, path };
    let all: Vec<&OrderPlaced> = orders.iter().collect();
    assert_eq!(
        store.state(),
        applied_once(&all, &all),
        "billing's ids stay duplicates; shipping applies, once, what the old key hid from it"
    );
}

/// Every row of the business tables, as text.
fn business_rows(path: &Path) -> Vec<String> {
    let db = Connection::open(path).unwrap();
    let mut rows = Vec::new();
    for query in [
        "SELECT 'revenue:' || total FROM revenue",
        "SELECT message_id || ':' || order_id || ':' || total FROM invoices ORDER BY rowid",
        "SELECT message_id || ':' || order_id FROM shipments ORDER BY rowid",
    ] {
        let mut statement = db.prepare(query).unwrap();
        let found = statement
            .query_map([], |row| row.get::<_, String>(0))
            .unwrap();
        rows.extend(found.map(Result::unwrap));
    }
    rows
}

#[test]
fn report_lists_skipped_messages() {
    let dir = scratch();
    let path = dir.path().join("orders.db");
    let orders = orders(6);
    production_before_the_retrofit(&path, &orders);
    let mut db = open(&path).unwrap();
    migrate(&mut db).unwrap();
    let before = business_rows(&path);
    let report = skipped_messages(&db).unwrap();
    let skipped: Vec<(String, String)> = ["ord-03", "ord-04", "ord-05"]
        .iter()
        .map(|id| ("shipping".to_owned(), id.to_string()))
        .collect();
    assert_eq!(
        (report, business_rows(&path)),
        (skipped, before),
        "the report lists every order a consumer skipped and changes nothing"
    );
}
