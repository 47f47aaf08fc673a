//! The required tests for the credits consumer, written before the
//! retrofit and run unchanged against the consumer as found and against
//! the retrofit (`--features retrofitted`). Each test plays the broker: an
//! error from `handle` asks for a redelivery. They judge the business
//! state (balance and credit log) and the answers only.
//!
//! Every test works in a schema of its own, dropped at the end, so that
//! tests run in parallel on one database. Without a server they fail,
//! saying how to start one.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};

use corpus_live_processed::{
    BUSINESS_SCHEMA, Credit, dead_letters, double_credits, handle, migrate, setup,
};
use postgres::{Client, Config, NoTls};

const AMOUNT: i64 = 25;
const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A schema of its own on the test server, dropped with this value.
struct Database {
    url: String,
    schema: String,
    config: Config,
}

impl Database {
    /// A fresh schema, set up, holding customer "c-1" with no credit.
    fn new() -> Self {
        let database = Self::empty();
        let mut client = database.client();
        setup(&mut client).unwrap();
        client
            .execute(
                "INSERT INTO balances (customer, credit) VALUES ('c-1', 0)",
                &[],
            )
            .unwrap();
        database
    }

    /// A fresh schema with no tables.
    fn empty() -> Self {
        static SCHEMAS: AtomicU32 = AtomicU32::new(0);
        let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.to_owned());
        let mut admin = Client::connect(&url, NoTls).unwrap_or_else(|error| {
            panic!(
                "PostgreSQL is not reachable at {url}: {error}\n\
                 These tests need a server: start one (on Debian: \
                 pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) \
                 or set DATABASE_URL to one where the user may create schemas."
            )
        });
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let schema = format!(
            "t_{}_{}_{nanos}",
            std::process::id(),
            SCHEMAS.fetch_add(1, Ordering::Relaxed)
        );
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .unwrap();
        let mut config: Config = url.parse().unwrap();
        config.options(&format!("-c search_path={schema}"));
        Self {
            url,
            schema,
            config,
        }
    }

    fn client(&self) -> Client {
        self.config.connect(NoTls).unwrap()
    }

    /// The credit of "c-1" and the credit log's message ids, sorted.
    fn state(&self) -> State {
        let mut client = self.client();
        let credit = client
            .query_one("SELECT credit FROM balances WHERE customer = 'c-1'", &[])
            .unwrap()
            .get(0);
        let ids = client
            .query("SELECT message_id FROM credit_log ORDER BY message_id", &[])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        (credit, ids)
    }

    /// From now on, writing the log row of `message` fails, after the
    /// balance went up. On PostgreSQL any error aborts the whole
    /// transaction: every later statement in it fails with 25P02.
    fn break_message(&self, message: &Credit) {
        self.client()
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS failing_messages (message_id TEXT PRIMARY KEY);
                 CREATE OR REPLACE FUNCTION fail_credit_log() RETURNS trigger
                 LANGUAGE plpgsql AS $$
                 BEGIN
                     IF EXISTS (SELECT 1 FROM failing_messages WHERE message_id = NEW.message_id) THEN
                         RAISE EXCEPTION 'injected failure for %', NEW.message_id;
                     END IF;
                     RETURN NEW;
                 END $$;
                 CREATE OR REPLACE TRIGGER fail_credit_log AFTER INSERT ON credit_log
                     FOR EACH ROW EXECUTE FUNCTION fail_credit_log();
                 INSERT INTO failing_messages VALUES ('{}');",
                message.message_id
            ))
            .unwrap();
    }

    fn heal(&self) {
        self.client()
            .execute("DELETE FROM failing_messages", &[])
            .unwrap();
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut admin) = Client::connect(&self.url, NoTls) {
            let _ = admin.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema));
        }
    }
}

fn credits(count: usize) -> Vec<Credit> {
    (0..count)
        .map(|i| Credit {
            message_id: format!("cr-{i:02}"),
            customer: "c-1".to_owned(),
            amount: AMOUNT,
        })
        .collect()
}

/// The credit of "c-1" and the credit log's message ids, sorted.
type State = (i64, Vec<String>);

/// The state after crediting each of `credits` exactly once.
fn credited_once<'a>(credits: impl IntoIterator<Item = &'a Credit>) -> State {
    let mut ids: Vec<String> = credits.into_iter().map(|c| c.message_id.clone()).collect();
    ids.sort();
    (AMOUNT * ids.len() as i64, ids)
}

fn deliver_all(client: &mut Client, credits: &[Credit]) -> Vec<bool> {
    credits.iter().map(|c| handle(client, c).is_ok()).collect()
}

#[test]
fn run_twice_credits_once() {
    let database = Database::new();
    let mut client = database.client();
    let credits = credits(50);
    let mut acks = deliver_all(&mut client, &credits);
    acks.extend(deliver_all(&mut client, &credits));
    assert_eq!(
        (database.state(), acks),
        (credited_once(&credits), vec![true; 100])
    );
}

/// Rounds of the parallel scenario, each in a fresh schema, with the
/// workers meeting at a barrier before every message.
const ROUNDS: usize = 3;
const WORKERS: usize = 4;

#[test]
fn parallel_workers_credit_once() {
    let credits = credits(50);
    for round in 1..=ROUNDS {
        let database = Database::new();
        let barrier = Barrier::new(WORKERS);
        let failures: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let mut client = database.client();
                    let (barrier, credits) = (&barrier, &credits);
                    scope.spawn(move || {
                        credits
                            .iter()
                            .filter(|credit| {
                                barrier.wait();
                                handle(&mut client, credit).is_err()
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
        // Waiting for another worker's lock is not a failure.
        assert_eq!(
            (database.state(), failures),
            (credited_once(&credits), 0),
            "round {round} of {ROUNDS}"
        );
    }
}

#[test]
fn failure_then_redelivery_credits_once() {
    let database = Database::new();
    let mut client = database.client();
    let credits = credits(10);
    let failing = &credits[3];
    database.break_message(failing);
    let acks = deliver_all(&mut client, &credits);
    let others = credits
        .iter()
        .filter(|c| c.message_id != failing.message_id);
    assert_eq!(
        (database.state(), acks[3]),
        (credited_once(others), false),
        "the failed attempt leaves nothing behind and asks for a redelivery"
    );
    database.heal();
    let redelivered = handle(&mut client, failing).is_ok();
    assert_eq!(
        (database.state(), redelivered),
        (credited_once(&credits), true),
        "the redelivery credits it, once"
    );
}

#[test]
fn poison_message_is_counted_then_dead_lettered() {
    let database = Database::new();
    let mut client = database.client();
    let credits = credits(10);
    let poison = &credits[3];
    database.break_message(poison);
    // The broker redelivers until the message is acknowledged.
    let acks: Vec<bool> = (0..4)
        .map(|_| handle(&mut client, poison).is_ok())
        .collect();
    let others_acked = deliver_all(&mut client, &credits[4..]);
    let parked: Vec<_> = dead_letters(&mut client)
        .unwrap()
        .into_iter()
        .map(|dead| {
            (
                dead.credit,
                dead.attempts,
                dead.error.contains("injected failure"),
            )
        })
        .collect();
    assert_eq!(
        (acks, others_acked, parked, database.state()),
        (
            vec![false, false, true, true],
            vec![true; 6],
            vec![(poison.clone(), 3, true)],
            credited_once(&credits[4..])
        ),
        "two redeliveries asked for, parked at the third failure, then a duplicate"
    );
}

/// Production as it is before the deploy: `processed` holds the id of
/// every credit applied so far (applied `times` times each), recorded an
/// hour ago.
fn production_before_the_retrofit(database: &Database, applied: &[(&Credit, i64)]) {
    let mut client = database.client();
    client.batch_execute(BUSINESS_SCHEMA).unwrap();
    client
        .batch_execute(
            "CREATE TABLE processed (
                 message_id   TEXT        PRIMARY KEY,
                 processed_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )
        .unwrap();
    let total: i64 = applied.iter().map(|(c, times)| c.amount * times).sum();
    client
        .execute(
            "INSERT INTO balances (customer, credit) VALUES ('c-1', $1)",
            &[&total],
        )
        .unwrap();
    for (credit, times) in applied {
        client
            .execute(
                "INSERT INTO processed (message_id, processed_at)
                 VALUES ($1, now() - interval '1 hour')",
                &[&credit.message_id],
            )
            .unwrap();
        for _ in 0..*times {
            client
                .execute(
                    "INSERT INTO credit_log (message_id, customer, amount) VALUES ($1, $2, $3)",
                    &[&credit.message_id, &credit.customer, &credit.amount],
                )
                .unwrap();
        }
    }
}

#[test]
fn migration_keeps_processed_ids_duplicates() {
    let database = Database::empty();
    let credits = credits(20);
    let applied: Vec<_> = credits.iter().map(|c| (c, 1)).collect();
    production_before_the_retrofit(&database, &applied);
    let mut client = database.client();
    setup(&mut client).unwrap();
    migrate(&mut client).unwrap();
    let acks = deliver_all(&mut client, &credits);
    assert_eq!(
        (database.state(), acks),
        (credited_once(&credits), vec![true; 20]),
        "every id of the old table stays a duplicate"
    );
}

/// Every row of the business tables, as text.
fn business_rows(database: &Database) -> Vec<String> {
    let mut client = database.client();
    let mut rows = Vec::new();
    for query in [
        "SELECT customer || ':' || credit FROM balances ORDER BY customer",
        "SELECT message_id || ':' || customer || ':' || amount FROM credit_log ORDER BY ctid",
    ] {
        rows.extend(
            client
                .query(query, &[])
                .unwrap()
                .iter()
                .map(|row| row.get(0)),
        );
    }
    rows
}

#[test]
fn report_lists_past_double_credits() {
    let database = Database::empty();
    let credits = credits(3);
    // What check-then-act left behind: cr-01 twice, cr-02 three times.
    production_before_the_retrofit(
        &database,
        &[(&credits[0], 1), (&credits[1], 2), (&credits[2], 3)],
    );
    let mut client = database.client();
    setup(&mut client).unwrap();
    migrate(&mut client).unwrap();
    let before = business_rows(&database);
    let report = double_credits(&mut client).unwrap();
    assert_eq!(
        (report, business_rows(&database)),
        (
            vec![("cr-01".to_owned(), 2), ("cr-02".to_owned(), 3)],
            before
        ),
        "the report lists every double credit and changes nothing"
    );
}
