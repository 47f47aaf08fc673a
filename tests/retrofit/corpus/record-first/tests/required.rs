//! The required tests for the inventory consumer, written before the
//! retrofit and run unchanged against the consumer as found and against
//! the retrofit (`--features retrofitted`). Each test plays the broker: it
//! delivers, reads the answer, and redelivers what was not acknowledged.
//! They judge the business state (stock and reservations) and the answers
//! to the broker only, so that they mean the same for both.

use std::path::{Path, PathBuf};
use std::sync::Barrier;

use corpus_record_first::{Ack, BUSINESS_SCHEMA, Delivery, Reserver};
use rusqlite::Connection;
use tempfile::TempDir;

const OPENING_STOCK: i64 = 1_000;
const QUANTITY: i64 = 5;

fn deliveries(count: usize) -> Vec<Delivery> {
    (0..count)
        .map(|i| Delivery {
            message_id: format!("msg-{i:02}"),
            sku: "sku-1".to_owned(),
            quantity: QUANTITY,
        })
        .collect()
}

/// Stock left of sku-1 and the reservations' message ids, sorted.
type State = (i64, Vec<String>);

/// The state after each of `deliveries` reserved exactly once.
fn reserved_once<'a>(deliveries: impl IntoIterator<Item = &'a Delivery>) -> State {
    let mut ids: Vec<String> = deliveries
        .into_iter()
        .map(|delivery| delivery.message_id.clone())
        .collect();
    ids.sort();
    (OPENING_STOCK - QUANTITY * ids.len() as i64, ids)
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

struct Shop {
    _dir: TempDir,
    path: PathBuf,
}

impl Shop {
    /// A fresh database holding the opening stock of sku-1.
    fn new() -> Self {
        let dir = scratch();
        let path = dir.path().join("shop.db");
        Reserver::open(&path).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute(
                "INSERT INTO stock (sku, available) VALUES ('sku-1', ?1)",
                [OPENING_STOCK],
            )
            .unwrap();
        Self { _dir: dir, path }
    }

    fn reserver(&self) -> Reserver {
        Reserver::open(&self.path).unwrap()
    }

    fn state(&self) -> State {
        let db = Connection::open(&self.path).unwrap();
        let available = db
            .query_row(
                "SELECT available FROM stock WHERE sku = 'sku-1'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let mut ids = db
            .prepare("SELECT message_id FROM reservations ORDER BY message_id")
            .unwrap();
        let ids = ids.query_map([], |row| row.get(0)).unwrap();
        (available, ids.collect::<Result<_, _>>().unwrap())
    }

    /// From now on, writing the reservation of `delivery` fails after the
    /// stock went down. `RAISE(ROLLBACK)` ends the whole transaction, as an
    /// I/O error can: the code must not write anything more in it.
    fn break_message(&self, delivery: &Delivery) {
        Connection::open(&self.path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS failing_messages (message_id TEXT PRIMARY KEY);
                 CREATE TRIGGER IF NOT EXISTS fail_reservation AFTER INSERT ON reservations
                 WHEN NEW.message_id IN (SELECT message_id FROM failing_messages)
                 BEGIN SELECT RAISE(ROLLBACK, 'injected failure'); END;
                 INSERT INTO failing_messages VALUES ('{}');",
                delivery.message_id
            ))
            .unwrap();
    }

    fn heal(&self) {
        Connection::open(&self.path)
            .unwrap()
            .execute("DELETE FROM failing_messages", [])
            .unwrap();
    }
}

fn deliver_all(reserver: &mut Reserver, deliveries: &[Delivery]) -> Vec<Ack> {
    deliveries
        .iter()
        .map(|delivery| reserver.on_message(delivery))
        .collect()
}

#[test]
fn run_twice_reserves_once() {
    let shop = Shop::new();
    let mut reserver = shop.reserver();
    let deliveries = deliveries(50);
    let mut answers = deliver_all(&mut reserver, &deliveries);
    answers.extend(deliver_all(&mut reserver, &deliveries));
    assert_eq!(
        (shop.state(), answers),
        (reserved_once(&deliveries), vec![Ack::Ack; 100])
    );
}

/// Rounds of the parallel scenario, each on a fresh database, with the
/// workers meeting at a barrier before every message (see the same
/// constant in the check-then-act entry for why one round is not enough).
const ROUNDS: usize = 10;
const WORKERS: usize = 4;

#[test]
fn parallel_workers_reserve_once() {
    let deliveries = deliveries(50);
    for round in 1..=ROUNDS {
        let shop = Shop::new();
        let barrier = Barrier::new(WORKERS);
        let answers: Vec<Ack> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let mut reserver = shop.reserver();
                    let (barrier, deliveries) = (&barrier, &deliveries);
                    scope.spawn(move || {
                        deliveries
                            .iter()
                            .map(|delivery| {
                                barrier.wait();
                                reserver.on_message(delivery)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().unwrap())
                .collect()
        });
        // A contended lock is not a failure: every answer is an Ack.
        let failures = answers.iter().filter(|answer| **answer != Ack::Ack).count();
        assert_eq!(
            (shop.state(), failures),
            (reserved_once(&deliveries), 0),
            "round {round} of {ROUNDS}"
        );
    }
}

#[test]
fn failure_then_redelivery_reserves_once() {
    let shop = Shop::new();
    let mut reserver = shop.reserver();
    let deliveries = deliveries(10);
    let failing = &deliveries[3];
    shop.break_message(failing);
    let answers = deliver_all(&mut reserver, &deliveries);
    let others = deliveries
        .iter()
        .filter(|d| d.message_id != failing.message_id);
    assert_eq!(
        (shop.state(), answers[3]),
        (reserved_once(others), Ack::Nak),
        "the failed attempt leaves nothing behind and asks for a redelivery"
    );
    shop.heal();
    // The broker redelivers what was not acknowledged.
    let redelivered = reserver.on_message(failing);
    assert_eq!(
        (shop.state(), redelivered),
        (reserved_once(&deliveries), Ack::Ack),
        "the redelivery reserves it, once"
    );
}

#[test]
fn poison_message_is_counted_then_dead_lettered() {
    let shop = Shop::new();
    let mut reserver = shop.reserver();
    let deliveries = deliveries(10);
    let poison = &deliveries[3];
    shop.break_message(poison);
    deliver_all(&mut reserver, &deliveries);
    // The broker keeps redelivering until it is told to stop, and may send
    // it once more after that.
    let answers: Vec<Ack> = (0..3).map(|_| reserver.on_message(poison)).collect();
    let parked: Vec<_> = reserver
        .dead_letters()
        .unwrap()
        .into_iter()
        .map(|dead| {
            (
                dead.delivery,
                dead.attempts,
                dead.error.contains("injected failure"),
            )
        })
        .collect();
    let others = deliveries
        .iter()
        .filter(|d| d.message_id != poison.message_id);
    assert_eq!(
        (answers, parked, shop.state()),
        (
            vec![Ack::Nak, Ack::Term, Ack::Ack],
            vec![(poison.clone(), 3, true)],
            reserved_once(others)
        ),
        "attempt 1 came with the others; the third parks it, the fourth is a duplicate"
    );
}

/// Production as it is before the deploy: the old dedup table holds the
/// ids of the messages recorded so far; `reserved` lists those whose
/// reservation happened.
fn production_before_the_retrofit(path: &Path, recorded: &[Delivery], reserved: &[Delivery]) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(BUSINESS_SCHEMA).unwrap();
    db.execute_batch("CREATE TABLE processed (message_id TEXT PRIMARY KEY)")
        .unwrap();
    let (available, _) = reserved_once(reserved);
    db.execute(
        "INSERT INTO stock (sku, available) VALUES ('sku-1', ?1)",
        [available],
    )
    .unwrap();
    for delivery in reserved {
        db.execute(
            "INSERT INTO reservations (message_id, sku, quantity) VALUES (?1, ?2, ?3)",
            (&delivery.message_id, &delivery.sku, delivery.quantity),
        )
        .unwrap();
    }
    for delivery in recorded {
        db.execute(
            "INSERT INTO processed (message_id) VALUES (?1)",
            [&delivery.message_id],
        )
        .unwrap();
    }
}

#[test]
fn migration_keeps_processed_ids_duplicates() {
    let dir = scratch();
    let path = dir.path().join("shop.db");
    let deliveries = deliveries(20);
    production_before_the_retrofit(&path, &deliveries, &deliveries);
    let mut reserver = Reserver::open(&path).unwrap();
    reserver.migrate().unwrap();
    let answers = deliver_all(&mut reserver, &deliveries);
    let shop = Shop { _dir: dir, path };
    assert_eq!(
        (shop.state(), answers),
        (reserved_once(&deliveries), vec![Ack::Ack; 20])
    );
}

/// Every row of the business tables, as text.
fn business_rows(path: &Path) -> Vec<String> {
    let db = Connection::open(path).unwrap();
    let mut rows = Vec::new();
    for query in [
        "SELECT sku || ':' || available FROM stock ORDER BY sku",
        "SELECT message_id || ':' || sku || ':' || quantity FROM reservations ORDER BY rowid",
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
fn report_lists_lost_messages() {
    let dir = scratch();
    let path = dir.path().join("shop.db");
    let deliveries = deliveries(6);
    // What record-first left behind: msg-02 and msg-05 were recorded, then
    // their reservation failed, and every redelivery was taken for a
    // duplicate.
    let reserved: Vec<Delivery> = deliveries
        .iter()
        .filter(|d| !["msg-02", "msg-05"].contains(&d.message_id.as_str()))
        .cloned()
        .collect();
    production_before_the_retrofit(&path, &deliveries, &reserved);
    let mut reserver = Reserver::open(&path).unwrap();
    reserver.migrate().unwrap();
    let before = business_rows(&path);
    let report = reserver.lost_messages().unwrap();
    assert_eq!(
        (report, business_rows(&path)),
        (vec!["msg-02".to_owned(), "msg-05".to_owned()], before),
        "the report lists every lost message and changes nothing"
    );
}
