//! Fresh schemas for scenarios, and the tripwire that makes a COMMIT fail
//! on demand.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use postgres::Client;

use {{crate_name}}::database::{Database, PgTables, Settings, TableStatements};
use {{crate_name}}::handlers::Tables;
use {{crate_name}}::inbox::StorageError;

use super::PgRaw;
use crate::support::raw::Raw;

/// How to reach a server when none is configured.
const NO_SERVER: &str = "these tests need a PostgreSQL server: set DATABASE_URL, e.g. \
     DATABASE_URL=postgres://postgres@localhost:5432/postgres. To start one: \
     docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15";

/// The server every fixture lives on: `DATABASE_URL`, required, with
/// commits that do not wait for the disk (`synchronous_commit=off`): a
/// fixture is thrown away after one scenario, and the server's locking,
/// visibility and atomicity, which the tests are about, stay the same. It
/// makes the suite several times faster on a slow disk.
pub fn server_url() -> String {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| panic!("{NO_SERVER}"));
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20synchronous_commit%3Doff")
}

/// A fresh schema with every table, for one scenario.
pub struct Fixture {
    schema: String,
    /// Whether this process made the schema (and drops it when done).
    owned: bool,
    /// The connection the harness reads state through, opened once.
    reader: Mutex<Option<(Client, TableStatements)>>,
}

/// Test-only objects that make every COMMIT fail while armed: a deferred
/// foreign key that an inbox row breaks, checked only when the transaction
/// commits.
const COMMIT_TRIPWIRE: &str = "
CREATE TABLE tripwire_armed (armed boolean NOT NULL);
CREATE TABLE tripwire_target (id integer PRIMARY KEY);
CREATE TABLE tripwire (
    target integer REFERENCES tripwire_target (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE FUNCTION tripwire_on_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tripwire_armed) THEN
        INSERT INTO tripwire (target) VALUES (-1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER tripwire_on_inbox AFTER INSERT ON inbox
FOR EACH ROW EXECUTE FUNCTION tripwire_on_inbox();";

/// The consumer's tables, as its migration creates them.
const TABLES: &str = include_str!("../../../src/postgres/schema.sql");

static FIXTURES: AtomicU64 = AtomicU64::new(0);

impl Fixture {
    /// A new schema with the real tables.
    pub fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .subsec_nanos();
        let schema = format!(
            "inbox_test_{}_{}_{nanos}",
            std::process::id(),
            FIXTURES.fetch_add(1, Ordering::Relaxed)
        );
        let database = Database::open(server_url(), settings(&schema))
            .unwrap_or_else(|error| panic!("{error}\n{NO_SERVER}"));
        let mut client = database.connect().expect("connect");
        client.batch_execute(COMMIT_TRIPWIRE).expect("tripwire");
        let statements = TableStatements::prepare(&mut client).expect("prepare");
        Self {
            schema,
            owned: true,
            reader: Mutex::new(Some((client, statements))),
        }
    }

    /// Where the fixture is, for [`Fixture::attach`] in another process.
    pub fn location(&self) -> String {
        self.schema.clone()
    }

    /// The fixture another process made, at `location`.
    pub fn attach(location: &str) -> Self {
        Self {
            schema: location.to_owned(),
            owned: false,
            reader: Mutex::new(None),
        }
    }

    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed (to seed a fixture, or to read its state).
    pub fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut dyn Tables) -> Result<T, StorageError>,
    ) -> T {
        let mut reader = self.reader.lock().expect("reader");
        let (client, statements) = reader.get_or_insert_with(|| self.connect_with_statements());
        let mut tx = client.transaction().expect("begin");
        let result = work(&mut PgTables::new(&mut tx, statements)).expect("work on the tables");
        tx.commit().expect("commit");
        result
    }

    /// Inbox rows recorded for `consumer`.
    pub fn inbox_rows(&self, consumer: &str) -> usize {
        let mut reader = self.reader.lock().expect("reader");
        let (client, _) = reader.get_or_insert_with(|| self.connect_with_statements());
        let rows: i64 = client
            .query_one(
                "SELECT count(*) FROM inbox WHERE consumer = $1",
                &[&consumer],
            )
            .expect("count inbox rows")
            .get(0);
        usize::try_from(rows).expect("a count is never negative")
    }

    /// Runs `work` on the tables of an empty database, in a transaction
    /// that is always rolled back: a fresh database for every call, without
    /// the cost of creating one. The tables are temporary ones of a single
    /// connection kept for the whole test process, so nothing outlives it.
    pub fn scratch<T>(work: impl FnOnce(&mut dyn Tables) -> T) -> T {
        static SCRATCH: Mutex<Option<(Client, TableStatements)>> = Mutex::new(None);
        let mut scratch = SCRATCH
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (client, statements) = scratch.get_or_insert_with(|| {
            let mut client = Client::connect(&server_url(), postgres::NoTls)
                .unwrap_or_else(|error| panic!("{error}\n{NO_SERVER}"));
            client
                .batch_execute("SET search_path = pg_temp")
                .expect("temporary tables");
            client.batch_execute(TABLES).expect("create the tables");
            let statements = TableStatements::prepare(&mut client).expect("prepare");
            (client, statements)
        });
        let mut tx = client.transaction().expect("begin");
        work(&mut PgTables::new(&mut tx, statements))
    }

    fn connect_with_statements(&self) -> (Client, TableStatements) {
        let mut client = self.database().connect().expect("connect");
        let statements = TableStatements::prepare(&mut client).expect("prepare");
        (client, statements)
    }

    /// The database, as the consumer opens it.
    pub fn database(&self) -> Database {
        Database::new(server_url(), settings(&self.schema))
    }

    /// The consumer binary's options that point it at this database. The
    /// URL carries a password (one the server may ignore, with trust
    /// authentication) so that the tests can check it never leaks.
    pub fn cli_args(&self) -> Vec<String> {
        vec![
            "--database-url".into(),
            url_with_password(&server_url()),
            "--schema".into(),
            self.schema.clone(),
        ]
    }

    /// What the consumer must never write to its logs: the password.
    pub fn secrets(&self) -> Vec<String> {
        let url = url_with_password(&server_url());
        let config: postgres::Config = url.parse().expect("a valid DATABASE_URL");
        let password = config.get_password().expect("a password");
        vec![String::from_utf8_lossy(password).into_owned()]
    }

    /// What a consistency check finds wrong: nothing to check here, as a
    /// killed client cannot corrupt the server's tables.
    pub fn integrity_problems(&self) -> Option<String> {
        None
    }

    /// A connection for hand-written inboxes.
    pub fn raw(&self) -> Box<dyn Raw> {
        Box::new(PgRaw::new(self.database().connect().expect("connect")))
    }

    /// Runs SQL statements in the schema (schema changes for traps).
    pub fn execute(&self, sql: &str) {
        let mut client = self.database().connect().expect("connect");
        client
            .batch_execute(sql)
            .unwrap_or_else(|error| panic!("{error}:\n{sql}"));
    }

    /// From now on, every COMMIT that wrote an inbox row fails (`true`), or
    /// none does (`false`).
    pub fn fail_commits(&self, fail: bool) {
        self.execute(if fail {
            "INSERT INTO tripwire_armed VALUES (true);"
        } else {
            "DELETE FROM tripwire_armed;"
        });
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let mut reader = self
            .reader
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some((client, _)) = reader.as_mut() else {
            return;
        };
        if let Ok(row) = client.query_one(
            "SELECT format('DROP SCHEMA IF EXISTS %I CASCADE', $1::text)",
            &[&self.schema],
        ) {
            let _ = client.batch_execute(row.get::<_, &str>(0));
        }
    }
}

fn settings(schema: &str) -> Settings {
    Settings {
        schema: schema.to_owned(),
    }
}

/// `url` with a password, adding a made-up one if it has none.
fn url_with_password(url: &str) -> String {
    let config: postgres::Config = url.parse().expect("a valid DATABASE_URL");
    if config.get_password().is_some() {
        return url.to_owned();
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return format!("{url} password=made-up-secret-31337");
    };
    match rest.split_once('@') {
        Some((user, host)) => format!("{scheme}://{user}:made-up-secret-31337@{host}"),
        None => format!("{scheme}://postgres:made-up-secret-31337@{rest}"),
    }
}
