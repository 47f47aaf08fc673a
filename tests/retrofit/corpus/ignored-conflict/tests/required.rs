//! The required tests for the loyalty consumer, written before the
//! retrofit and run unchanged against the consumer as found and against
//! the retrofit (`--features retrofitted`). Each test plays the broker: an
//! error from `handle` asks for a redelivery. They judge the business
//! state (points and point events) and the answers only.
//!
//! Every test works in a schema of its own, dropped at the end, so that
//! tests run in parallel on one database. Without a server they fail,
//! saying how to start one.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};

use corpus_ignored_conflict::{CONSUMER, Loyalty, PointsEarned, SCHEMA};
use postgres::{Client, Config, NoTls};

const POINTS: i64 = 7;
const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A schema of its own on the test server, dropped with this value.
struct Database {
    url: String,
    schema: String,
    config: Config,
}

impl Database {
    /// A fresh schema holding member 1 with no points.
    fn new() -> Self {
        let database = Self::empty();
        database.client().batch_execute(SCHEMA).unwrap();
        database
            .client()
            .execute("INSERT INTO members (id, points) VALUES (1, 0)", &[])
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

    fn loyalty(&self) -> Loyalty {
        Loyalty::connect(&self.config).unwrap()
    }

    /// Member 1's points and the point events' message ids, sorted.
    fn state(&self) -> State {
        let mut client = self.client();
        let points = client
            .query_one("SELECT points FROM members WHERE id = 1", &[])
            .unwrap()
            .get(0);
        let ids = client
            .query(
                "SELECT message_id FROM point_events ORDER BY message_id",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        (points, ids)
    }

    /// From now on, writing the point event of `message` fails, after the
    /// member's total went up. On PostgreSQL any error aborts the whole
    /// transaction: every later statement in it fails with 25P02.
    fn break_message(&self, message: &PointsEarned) {
        self.client()
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS failing_messages (message_id TEXT PRIMARY KEY);
                 CREATE OR REPLACE FUNCTION fail_point_event() RETURNS trigger
                 LANGUAGE plpgsql AS $$
                 BEGIN
                     IF EXISTS (SELECT 1 FROM failing_messages WHERE message_id = NEW.message_id) THEN
                         RAISE EXCEPTION 'injected failure for %', NEW.message_id;
                     END IF;
                     RETURN NEW;
                 END $$;
                 CREATE OR REPLACE TRIGGER fail_point_event AFTER INSERT ON point_events
                     FOR EACH ROW EXECUTE FUNCTION fail_point_event();
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

fn messages(count: usize) -> Vec<PointsEarned> {
    (0..count)
        .map(|i| PointsEarned {
            message_id: format!("pts-{i:02}"),
            member: 1,
            points: POINTS,
        })
        .collect()
}

/// Member 1's points and the point events' message ids, sorted.
type State = (i64, Vec<String>);

/// The state after awarding each of `messages` exactly once.
fn awarded_once<'a>(messages: impl IntoIterator<Item = &'a PointsEarned>) -> State {
    let mut ids: Vec<String> = messages.into_iter().map(|m| m.message_id.clone()).collect();
    ids.sort();
    (POINTS * ids.len() as i64, ids)
}

fn deliver_all(loyalty: &mut Loyalty, messages: &[PointsEarned]) -> Vec<bool> {
    messages.iter().map(|m| loyalty.handle(m).is_ok()).collect()
}

#[test]
fn run_twice_awards_once() {
    let database = Database::new();
    let mut loyalty = database.loyalty();
    let messages = messages(50);
    let mut acks = deliver_all(&mut loyalty, &messages);
    acks.extend(deliver_all(&mut loyalty, &messages));
    assert_eq!(
        (database.state(), acks),
        (awarded_once(&messages), vec![true; 100])
    );
}

/// Rounds of the parallel scenario, each in a fresh schema, with the
/// workers meeting at a barrier before every message.
const ROUNDS: usize = 3;
const WORKERS: usize = 4;

#[test]
fn parallel_workers_award_once() {
    let messages = messages(50);
    for round in 1..=ROUNDS {
        let database = Database::new();
        let barrier = Barrier::new(WORKERS);
        let failures: usize = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..WORKERS)
                .map(|_| {
                    let mut loyalty = database.loyalty();
                    let (barrier, messages) = (&barrier, &messages);
                    scope.spawn(move || {
                        messages
                            .iter()
                            .filter(|message| {
                                barrier.wait();
                                loyalty.handle(message).is_err()
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
            (awarded_once(&messages), 0),
            "round {round} of {ROUNDS}"
        );
    }
}

#[test]
fn failure_then_redelivery_awards_once() {
    let database = Database::new();
    let mut loyalty = database.loyalty();
    let messages = messages(10);
    let failing = &messages[3];
    database.break_message(failing);
    let acks = deliver_all(&mut loyalty, &messages);
    let others = messages
        .iter()
        .filter(|m| m.message_id != failing.message_id);
    assert_eq!(
        (database.state(), acks[3]),
        (awarded_once(others), false),
        "the failed attempt leaves nothing behind and asks for a redelivery"
    );
    database.heal();
    let redelivered = loyalty.handle(failing).is_ok();
    assert_eq!(
        (database.state(), redelivered),
        (awarded_once(&messages), true),
        "the redelivery awards it, once"
    );
}

#[test]
fn poison_message_is_counted_then_dead_lettered() {
    let database = Database::new();
    let mut loyalty = database.loyalty();
    let messages = messages(10);
    let poison = &messages[3];
    database.break_message(poison);
    // The broker redelivers until the message is acknowledged.
    let acks: Vec<bool> = (0..4).map(|_| loyalty.handle(poison).is_ok()).collect();
    let others_acked = deliver_all(&mut loyalty, &messages[4..]);
    let parked: Vec<_> = loyalty
        .dead_letters()
        .unwrap()
        .into_iter()
        .map(|dead| {
            (
                dead.message,
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
            awarded_once(&messages[4..])
        ),
        "two redeliveries asked for, parked at the third failure, then a duplicate"
    );
}

/// Production as it is before the deploy: the inbox already holds the ids
/// of the awards made so far, each awarded `times` times.
fn production_before_the_retrofit(database: &Database, awarded: &[(&PointsEarned, i64)]) {
    let mut client = database.client();
    client.batch_execute(SCHEMA).unwrap();
    let total: i64 = awarded.iter().map(|(m, times)| m.points * times).sum();
    client
        .execute("INSERT INTO members (id, points) VALUES (1, $1)", &[&total])
        .unwrap();
    for (message, times) in awarded {
        client
            .execute(
                "INSERT INTO inbox (consumer, message_id) VALUES ($1, $2)",
                &[&CONSUMER, &message.message_id],
            )
            .unwrap();
        for _ in 0..*times {
            client
                .execute(
                    "INSERT INTO point_events (message_id, member, points) VALUES ($1, $2, $3)",
                    &[&message.message_id, &message.member, &message.points],
                )
                .unwrap();
        }
    }
}

#[test]
fn migration_keeps_inbox_ids_duplicates() {
    let database = Database::empty();
    let messages = messages(20);
    let awarded: Vec<_> = messages.iter().map(|m| (m, 1)).collect();
    production_before_the_retrofit(&database, &awarded);
    let mut loyalty = database.loyalty();
    let blocking = loyalty.migrate().unwrap();
    let acks = deliver_all(&mut loyalty, &messages);
    assert_eq!(
        (blocking, database.state(), acks),
        (vec![], awarded_once(&messages), vec![true; 20]),
        "every id the inbox holds stays a duplicate"
    );
}

/// Every row of the business tables, as text.
fn business_rows(database: &Database) -> Vec<String> {
    let mut client = database.client();
    let mut rows = Vec::new();
    for query in [
        "SELECT id || ':' || points FROM members ORDER BY id",
        "SELECT message_id || ':' || member || ':' || points FROM point_events ORDER BY ctid",
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
fn report_lists_past_double_awards() {
    let database = Database::empty();
    let messages = messages(3);
    // What the ignored conflict left behind: pts-01 twice, pts-02 three times.
    production_before_the_retrofit(
        &database,
        &[(&messages[0], 1), (&messages[1], 2), (&messages[2], 3)],
    );
    let mut loyalty = database.loyalty();
    let before = business_rows(&database);
    let report = loyalty.double_awards().unwrap();
    // The unique key cannot go on point_events while they exist.
    let blocking = loyalty.migrate().unwrap();
    let doubles = vec![("pts-01".to_owned(), 2), ("pts-02".to_owned(), 3)];
    assert_eq!(
        (report, blocking, business_rows(&database)),
        (doubles.clone(), doubles, before),
        "the report lists every double award, the migration refuses the key, and nothing changes"
    );
}
