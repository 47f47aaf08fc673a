//! The required tests for the wallet consumer, written before the retrofit
//! and run unchanged against the consumer as found and against the
//! retrofit (`--features retrofitted`). They judge the business state
//! only (balance and ledger), so that they mean the same for both.

use std::path::{Path, PathBuf};
use std::sync::Barrier;

use corpus_check_then_act::{
    BUSINESS_SCHEMA, Event, dead_letters, double_applied, handle, migrate, open, retry_due,
};
use rusqlite::Connection;
use tempfile::TempDir;

const OPENING_BALANCE: i64 = 1_000;
const AMOUNT: i64 = 10;
/// The clock `hours` from now, in milliseconds since the Unix epoch: the
/// retry sweep takes the time as an argument, so no test sleeps.
fn hours_from_now(hours: i64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    now.as_millis() as i64 + hours * 3_600_000
}

fn events(count: usize) -> Vec<Event> {
    (0..count)
        .map(|i| Event {
            id: format!("evt-{i:02}"),
            account: 1,
            amount: AMOUNT,
        })
        .collect()
}

/// Balance of account 1 and the ledger's event ids, sorted.
type State = (i64, Vec<String>);

/// The state after applying each of `events` exactly once.
fn applied_once<'a>(events: impl IntoIterator<Item = &'a Event>) -> State {
    let mut ids: Vec<String> = events.into_iter().map(|event| event.id.clone()).collect();
    ids.sort();
    (OPENING_BALANCE - AMOUNT * ids.len() as i64, ids)
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

struct Wallet {
    _dir: TempDir,
    path: PathBuf,
}

impl Wallet {
    /// A fresh database: account 1 holds the opening balance.
    fn new() -> Self {
        let dir = scratch();
        let path = dir.path().join("wallet.db");
        open(&path)
            .unwrap()
            .execute(
                "INSERT INTO accounts (id, balance) VALUES (1, ?1)",
                [OPENING_BALANCE],
            )
            .unwrap();
        Self { _dir: dir, path }
    }

    fn connect(&self) -> Connection {
        open(&self.path).unwrap()
    }

    fn state(&self) -> State {
        let db = Connection::open(&self.path).unwrap();
        let balance = db
            .query_row("SELECT balance FROM accounts WHERE id = 1", [], |row| {
                row.get(0)
            })
            .unwrap();
        let mut ids = db
            .prepare("SELECT event_id FROM ledger ORDER BY event_id")
            .unwrap();
        let ids = ids.query_map([], |row| row.get(0)).unwrap();
        (balance, ids.collect::<Result<_, _>>().unwrap())
    }

    /// From now on, writing the ledger row of `event` fails, after the
    /// debit: the business update fails halfway. `RAISE(ABORT)` undoes the
    /// statement only; the code decides what happens to the rest.
    fn break_event(&self, event: &Event) {
        Connection::open(&self.path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS failing_events (event_id TEXT PRIMARY KEY);
                 CREATE TRIGGER IF NOT EXISTS fail_ledger_row AFTER INSERT ON ledger
                 WHEN NEW.event_id IN (SELECT event_id FROM failing_events)
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;
                 INSERT INTO failing_events VALUES ('{}');",
                event.id
            ))
            .unwrap();
    }

    fn heal(&self) {
        Connection::open(&self.path)
            .unwrap()
            .execute("DELETE FROM failing_events", [])
            .unwrap();
    }
}

#[test]
fn run_twice_applies_each_event_once() {
    let wallet = Wallet::new();
    let db = wallet.connect();
    let events = events(50);
    for _ in 0..2 {
        events.iter().for_each(|event| handle(&db, event));
    }
    assert_eq!(wallet.state(), applied_once(&events));
}

/// Rounds of the parallel scenario, each on a fresh database. The workers
/// meet at a barrier before every event, so every event is contended, yet
/// one round let check-then-act through in 31 runs out of 300 on 2 cores
/// (the writes are so short that the scheduler can still run the workers
/// one after another). Ten independent rounds all miss about once in ten
/// billion runs.
const ROUNDS: usize = 10;
const WORKERS: usize = 4;

#[test]
fn parallel_workers_apply_each_event_once() {
    let events = events(50);
    for round in 1..=ROUNDS {
        let wallet = Wallet::new();
        let barrier = Barrier::new(WORKERS);
        std::thread::scope(|scope| {
            for _ in 0..WORKERS {
                let db = wallet.connect();
                let (barrier, events) = (&barrier, &events);
                scope.spawn(move || {
                    for event in events {
                        barrier.wait();
                        handle(&db, event);
                    }
                });
            }
        });
        // Nothing failed either: a contended lock is not a failure, so no
        // event waits for a retry.
        let retried = retry_due(&wallet.connect(), hours_from_now(1)).unwrap();
        assert_eq!(
            (wallet.state(), retried),
            (applied_once(&events), 0),
            "round {round} of {ROUNDS}"
        );
    }
}

#[test]
fn failure_then_redelivery_applies_once() {
    let wallet = Wallet::new();
    let db = wallet.connect();
    let events = events(10);
    wallet.break_event(&events[3]);
    events.iter().for_each(|event| handle(&db, event));
    let others = events.iter().filter(|event| event.id != events[3].id);
    assert_eq!(
        wallet.state(),
        applied_once(others),
        "the failed attempt must leave nothing behind"
    );
    wallet.heal();
    // The feed sends everything again, as a broker would.
    events.iter().for_each(|event| handle(&db, event));
    assert_eq!(
        wallet.state(),
        applied_once(&events),
        "after the redelivery"
    );
}

#[test]
fn failed_event_is_retried_without_a_resend() {
    let wallet = Wallet::new();
    let db = wallet.connect();
    let events = events(10);
    wallet.break_event(&events[3]);
    events.iter().for_each(|event| handle(&db, event));
    wallet.heal();
    // The feed never sends an event twice: the retry is the redelivery.
    let before_its_backoff = retry_due(&db, 0).unwrap();
    let retried = retry_due(&db, hours_from_now(1)).unwrap();
    assert_eq!(
        (before_its_backoff, retried, wallet.state()),
        (0, 1, applied_once(&events))
    );
}

#[test]
fn poison_event_is_counted_then_dead_lettered() {
    let wallet = Wallet::new();
    let db = wallet.connect();
    let events = events(10);
    let poison = &events[3];
    wallet.break_event(poison);
    events.iter().for_each(|event| handle(&db, event));
    let retries: Vec<usize> = (1..=3)
        .map(|hours| retry_due(&db, hours_from_now(hours)).unwrap())
        .collect();
    let parked: Vec<_> = dead_letters(&db)
        .unwrap()
        .into_iter()
        .map(|dead| {
            (
                dead.event,
                dead.attempts,
                dead.error.contains("injected failure"),
            )
        })
        .collect();
    let others = || events.iter().filter(|event| event.id != poison.id);
    // Attempts 2 and 3 come from the retries; the third parks the event.
    assert_eq!(
        (retries, parked, wallet.state()),
        (
            vec![1, 1, 0],
            vec![(poison.clone(), 3, true)],
            applied_once(others())
        )
    );
    handle(&db, poison);
    assert_eq!(
        (wallet.state(), dead_letters(&db).unwrap().len()),
        (applied_once(others()), 1),
        "a delivery after the dead letter is a duplicate"
    );
}

/// Production as it is before the deploy: the old dedup table holds the
/// ids of the events already applied.
fn production_before_the_retrofit(path: &Path, applied: &[Event]) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(BUSINESS_SCHEMA).unwrap();
    db.execute_batch("CREATE TABLE processed_events (event_id TEXT PRIMARY KEY)")
        .unwrap();
    let (balance, _) = applied_once(applied);
    db.execute(
        "INSERT INTO accounts (id, balance) VALUES (1, ?1)",
        [balance],
    )
    .unwrap();
    for event in applied {
        db.execute(
            "INSERT INTO ledger (event_id, account, amount) VALUES (?1, ?2, ?3)",
            (&event.id, event.account, event.amount),
        )
        .unwrap();
        db.execute(
            "INSERT INTO processed_events (event_id) VALUES (?1)",
            [&event.id],
        )
        .unwrap();
    }
}

#[test]
fn migration_keeps_processed_ids_duplicates() {
    let dir = scratch();
    let path = dir.path().join("wallet.db");
    let events = events(20);
    production_before_the_retrofit(&path, &events);
    let db = open(&path).unwrap();
    migrate(&db).unwrap();
    events.iter().for_each(|event| handle(&db, event));
    let wallet = Wallet { _dir: dir, path };
    assert_eq!(wallet.state(), applied_once(&events));
}

/// Every row of the business tables, as text.
fn business_rows(db: &Connection) -> Vec<String> {
    let mut rows = Vec::new();
    for query in [
        "SELECT id || ':' || balance FROM accounts ORDER BY id",
        "SELECT event_id || ':' || account || ':' || amount FROM ledger ORDER BY rowid",
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
fn report_lists_past_double_applications() {
    let dir = scratch();
    let path = dir.path().join("wallet.db");
    let events = events(3);
    production_before_the_retrofit(&path, &events);
    let db = open(&path).unwrap();
    // What check-then-act left behind: evt-01 twice, evt-02 three times.
    for id in ["evt-01", "evt-02", "evt-02"] {
        db.execute(
            "INSERT INTO ledger (event_id, account, amount) VALUES (?1, 1, ?2)",
            (id, AMOUNT),
        )
        .unwrap();
        db.execute("UPDATE accounts SET balance = balance - ?1", [AMOUNT])
            .unwrap();
    }
    let before = business_rows(&db);
    let report = double_applied(&db).unwrap();
    assert_eq!(
        (report, business_rows(&db)),
        (
            vec![("evt-01".to_owned(), 2), ("evt-02".to_owned(), 3)],
            before
        ),
        "the report lists every double application and changes nothing"
    );
}
