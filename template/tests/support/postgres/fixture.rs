//! Schemas for scenarios (the ways to make them fail on demand are in
//! `tripwires.rs`).
//!
//! Creating a schema with every table and index and dropping it after costs
//! 30 to 50 ms on a loaded 2-core machine (and bloats the server's
//! catalogs until the next vacuum, which slows everything else): more than
//! the scenario it serves. So schemas are pooled. A fixture takes a free
//! slot of this project's pool (`inbox_test_<n>_<crate>`: free while no
//! session holds its advisory lock), empties its tables in one round trip,
//! and holds the lock while it lives. When it is dropped, the slot stays
//! with this process, connection, lock and opened inboxes included, for
//! the next fixture, so a process connects once per slot, not once per
//! scenario. A slot built from other tables (`TABLES` or the tripwire
//! changed) is built again, and one whose schema a test changed (a broken
//! key's patch) is dropped. Slots stay on the server between runs, as many
//! as fixtures ever lived at once; drop them whenever you like.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use postgres::Client;

use {{crate_name}}::database::{
    Database, INBOX_SCHEMA, PgInbox, PgTables, Pipelined, Settings, TABLES, TableStatements,
};
use {{crate_name}}::handler::HandlerError;
use {{crate_name}}::handlers::{BorrowedHandler, Handlers, Tables};
use {{crate_name}}::inbox::{
    DeadLetter, DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError,
};
use {{crate_name}}::message::Message;
use {{crate_name}}::store::Store;

use super::PgRaw;
use super::tripwires::TRIPWIRES;
use crate::support::harness::Raw;
use crate::support::harness::{self, InboxWithLetters, ThisProject, hangs};
use crate::support::proxy::Proxy;

/// How to reach a server when none is configured.
const NO_SERVER: &str = "these tests need a PostgreSQL server: set DATABASE_URL, e.g. \
     DATABASE_URL=postgres://postgres@localhost:5432/postgres. To start one: \
     docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15";

/// The server every fixture lives on: `DATABASE_URL`, required, with
/// commits that do not wait for the disk (`synchronous_commit=off`): a
/// fixture is thrown away after one scenario, and the server's locking,
/// visibility and atomicity, which the tests are about, stay the same. It
/// makes the suite several times faster on a slow disk.
///
/// Every wait on the server is bounded too (`lock_timeout` and
/// `statement_timeout`, twice the harness's hang limit, so that the
/// harness's own report of a hang comes first), and every session is
/// named after this process ([`APPLICATION`]), so that the hang report
/// can say which of them holds the lock another waits for.
pub fn server_url() -> String {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| panic!("{NO_SERVER}"));
    let separator = if url.contains('?') { '&' } else { '?' };
    let bound = (2 * hangs::limit().as_millis()).min(i32::MAX as u128);
    format!(
        "{url}{separator}options=-c%20synchronous_commit%3Doff\
         %20-c%20lock_timeout%3D{bound}%20-c%20statement_timeout%3D{bound}\
         &application_name={}",
        application()
    )
}

/// The `application_name` of this process's sessions.
pub fn application() -> String {
    format!("inbox-test-{}", std::process::id())
}

/// This database taken away from a consumer and given back, by cutting
/// and restoring the proxy between them.
pub struct Outage {
    proxy: Proxy,
    args: Vec<String>,
}

impl Outage {
    /// The consumer binary's options that point it at the database,
    /// through the proxy.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    pub fn begin(&self) {
        self.proxy.cut();
    }

    pub fn end(&self) {
        self.proxy.restore();
    }
}

/// The pool's name: slots are `inbox_test_<n>_<pool>`, each locked by the
/// advisory lock (`hashtext(pool)`, n).
const POOL: &str = "{{crate_name}}";

/// A slot this process holds: its schema, the connection holding its lock
/// (through which the harness reads state), and the inboxes opened on it
/// that no worker uses now.
struct Slot {
    schema: String,
    reader: Client,
    statements: TableStatements,
    idle_inboxes: Vec<(Policy, PgInbox)>,
}

/// Slots this process holds that no fixture uses.
static IDLE_SLOTS: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

/// Numbers the fixtures of this process.
static SERIALS: AtomicU64 = AtomicU64::new(0);

/// A schema with every table and nothing in them, for one scenario.
pub struct Fixture {
    schema: String,
    /// Which fixture of this process this is (a slot serves many).
    serial: u64,
    /// The slot, while this fixture holds it (`None`: attached to another
    /// process's fixture, which holds it). Shared with the inboxes it lent.
    slot: Arc<Mutex<Option<Slot>>>,
    /// Whether a test changed the schema itself: the slot is then dropped.
    patched: AtomicBool,
}

/// How large a slot's table may grow (rows and dead rows, indexes
/// included) before a reset truncates it instead of deleting its rows.
pub const SLOT_TABLE_BYTES: i64 = 1 << 20;

/// Empties every table of the slot in the session's schema and drops the
/// tripwire triggers a test installed, in one round trip, if it was built
/// from `$1`; `false` if it was built from other tables. Deleting a few hundred rows is cheaper than TRUNCATE, which
/// makes new files for every table and index, but leaves them behind as
/// dead rows until a vacuum (which a server may never run: autovacuum can
/// be off), so a table grown past `$2` bytes is truncated.
const RESET_SLOT: &str = "
CREATE TABLE pool_slot (tables text NOT NULL);
CREATE FUNCTION pool_reset(expected text, largest bigint) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    emptied record;
BEGIN
    IF (SELECT tables FROM pool_slot) IS DISTINCT FROM expected THEN
        RETURN false;
    END IF;
    PERFORM tripwires_remove();
    FOR emptied IN
        SELECT tablename FROM pg_tables
        WHERE schemaname = current_schema() AND tablename <> 'pool_slot'
    LOOP
        IF pg_total_relation_size(format('%I', emptied.tablename)::regclass) > largest THEN
            EXECUTE format('TRUNCATE %I CASCADE', emptied.tablename);
        ELSE
            EXECUTE format('DELETE FROM %I', emptied.tablename);
        END IF;
    END LOOP;
    RETURN true;
END $$;";

/// What a slot must be built from: the tables, the tripwires and its own
/// reset (a slot whose `pool_reset` is an older one is built again too).
fn slot_tables() -> String {
    format!("{INBOX_SCHEMA}\n{TABLES}\n{TRIPWIRES}\n{RESET_SLOT}")
}

impl Fixture {
    /// A schema with the real tables and nothing in them.
    pub fn new() -> Self {
        hangs::describe_the_database_with(super::describe_waits);
        let idle = IDLE_SLOTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        let mut slot = idle.unwrap_or_else(take_free_slot);
        let tables = slot_tables();
        let reset = slot
            .reader
            .query_one("SELECT pool_reset($1, $2)", &[&tables, &SLOT_TABLE_BYTES])
            .is_ok_and(|row| row.get::<_, bool>(0));
        if !reset {
            build_slot(&mut slot, &tables);
        }
        Self {
            schema: slot.schema.clone(),
            serial: SERIALS.fetch_add(1, Ordering::Relaxed),
            slot: Arc::new(Mutex::new(Some(slot))),
            patched: AtomicBool::new(false),
        }
    }

    /// A schema without the tripwires, for the benchmarks: what they
    /// measure is the consumer's own schema. On PostgreSQL every new
    /// fixture is one (a tripwire's trigger is installed when a test arms
    /// it, and dropped by the next reset).
    pub fn without_tripwires() -> Self {
        Self::new()
    }

    /// Where the fixture is, for [`Fixture::attach`] in another process.
    pub fn location(&self) -> String {
        self.schema.clone()
    }

    /// A name for this fixture that no other of this process has (its
    /// schema serves one fixture after another).
    pub fn identity(&self) -> String {
        format!("{} #{}", self.schema, self.serial)
    }

    /// The fixture another process made, at `location`.
    pub fn attach(location: &str) -> Self {
        hangs::describe_the_database_with(super::describe_waits);
        Self {
            schema: location.to_owned(),
            serial: SERIALS.fetch_add(1, Ordering::Relaxed),
            slot: Arc::default(),
            patched: AtomicBool::new(false),
        }
    }

    /// Runs `work` on the slot's reader connection (connected for an
    /// attached fixture, which has none).
    pub(super) fn with_reader<T>(
        &self,
        work: impl FnOnce(&mut Client, &TableStatements) -> T,
    ) -> T {
        let mut slot = self.slot.lock().expect("slot");
        if slot.is_none() {
            let mut reader = self.database().connect().expect("connect");
            let statements = TableStatements::prepare(&mut reader).expect("prepare");
            *slot = Some(Slot {
                schema: self.schema.clone(),
                reader,
                statements,
                idle_inboxes: Vec::new(),
            });
        }
        let slot = slot.as_mut().expect("just set");
        work(&mut slot.reader, &slot.statements)
    }

    /// Runs `work` on the handlers' tables in a transaction of its own,
    /// committed (to seed a fixture, or to read its state).
    pub fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut dyn Tables) -> Result<T, StorageError>,
    ) -> T {
        self.with_reader(|client, statements| {
            let mut tx = client.transaction().expect("begin");
            let result = work(&mut PgTables::new(&mut tx, statements)).expect("work on the tables");
            tx.commit().expect("commit");
            result
        })
    }

    /// Inbox rows recorded for `consumer`.
    pub fn inbox_rows(&self, consumer: &str) -> usize {
        let rows: i64 = self.with_reader(|client, _| {
            client
                .query_one(
                    "SELECT count(*) FROM inbox WHERE consumer = $1",
                    &[&consumer],
                )
                .expect("count inbox rows")
                .get(0)
        });
        usize::try_from(rows).expect("a count is never negative")
    }

    /// The real inbox on this fixture, for one worker: an idle one of the
    /// slot's if it has one with `policy`, a new connection otherwise. It
    /// goes back to the slot when dropped.
    pub fn inbox(&self, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        Box::new(self.borrow_inbox(policy))
    }

    /// Every dead letter, oldest first.
    pub fn dead_letters(&self) -> Vec<DeadLetter> {
        self.borrow_inbox(Policy::default())
            .dead_letters()
            .expect("read the dead letters")
    }

    /// Failures counted for `consumer`, all messages together.
    pub fn failures_counted(&self, consumer: &str) -> u64 {
        let failures: i64 = self.with_reader(|client, _| {
            client
                .query_one(
                    "SELECT coalesce(sum(failures), 0)::bigint FROM attempts WHERE consumer = $1",
                    &[&consumer],
                )
                .expect("count failures")
                .get(0)
        });
        failures.unsigned_abs()
    }

    /// Failures counted so far for (consumer, id).
    pub fn failures(&self, consumer: &str, id: &str) -> u32 {
        self.borrow_inbox(Policy::default())
            .failures(consumer, id)
            .expect("read the attempts")
    }

    fn borrow_inbox(&self, policy: Policy) -> Borrowed {
        let reused = self.slot.lock().expect("slot").as_mut().and_then(|slot| {
            let at = slot
                .idle_inboxes
                .iter()
                .position(|(idle, _)| *idle == policy)?;
            Some(slot.idle_inboxes.swap_remove(at).1)
        });
        let inbox = reused.unwrap_or_else(|| self.database().inbox(policy).expect("open inbox"));
        Borrowed {
            inbox: Some(inbox),
            policy,
            home: self.slot.clone(),
        }
    }

    /// Runs `work` on the tables of an empty database, in a transaction
    /// that is always rolled back: a fresh database for every call, without
    /// the cost of creating one. The tables are temporary ones of a single
    /// connection kept for the whole test process, so nothing outlives it.
    pub fn scratch<T>(work: impl FnOnce(&mut Scratch<'_>) -> T) -> T {
        static SCRATCH: Mutex<Option<(Pipelined, TableStatements)>> = Mutex::new(None);
        let mut scratch = SCRATCH
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (client, statements) = scratch.get_or_insert_with(|| {
            let config = server_url().parse().expect("a valid DATABASE_URL");
            let mut client =
                Pipelined::connect(&config).unwrap_or_else(|error| panic!("{error}\n{NO_SERVER}"));
            client
                .batch_execute("SET search_path = pg_temp")
                .expect("temporary tables");
            client.batch_execute(TABLES).expect("create the tables");
            let statements = TableStatements::prepare(&mut client).expect("prepare");
            (client, statements)
        });
        client.begin();
        let result = work(&mut Scratch {
            tx: client,
            statements,
        });
        client.rollback();
        result
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

    /// A way to take this database away from a consumer and give it back:
    /// a proxy between them (the server is shared with other tests).
    pub fn outage(&self) -> Outage {
        let url = url_with_password(&server_url());
        let config: postgres::Config = url.parse().expect("a valid DATABASE_URL");
        let host = match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(host)) => host.clone(),
            _ => panic!("an outage needs a server reached over TCP; DATABASE_URL names none"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let proxy = Proxy::to(&format!("{host}:{port}"));
        let (scheme, rest) = url
            .split_once("://")
            .expect("an outage needs DATABASE_URL as a URL (postgres://...)");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let user = authority.rsplit_once('@').map_or("", |(user, _)| user);
        let through = format!("{scheme}://{user}@{}/{path}", proxy.addr());
        Outage {
            proxy,
            args: vec![
                "--database-url".into(),
                through,
                "--schema".into(),
                self.schema.clone(),
            ],
        }
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
    pub fn raw(&self) -> Box<dyn Raw<ThisProject>> {
        Box::new(PgRaw::new(self.database().connect().expect("connect")))
    }

    /// A connection for hand-written inboxes that waits for any lock as
    /// long as it takes (the server's bounds switched off), as a
    /// consumer's own connection might.
    pub fn raw_waiting_forever(&self) -> Box<dyn Raw<ThisProject>> {
        let mut client = self.database().connect().expect("connect");
        client
            .batch_execute("SET lock_timeout = 0; SET statement_timeout = 0")
            .expect("wait without limit");
        Box::new(PgRaw::new(client))
    }

    /// Changes the schema itself (a broken key's patch): the slot is built
    /// again after this fixture.
    pub fn execute(&self, sql: &str) {
        self.patched.store(true, Ordering::SeqCst);
        self.run_sql(sql);
    }

    /// Changes data with SQL statements (what a broken implementation
    /// deletes behind the real one's back), on the reader's connection.
    pub fn run_sql(&self, sql: &str) {
        self.with_reader(|client, _| {
            client
                .batch_execute(sql)
                .unwrap_or_else(|error| panic!("{error}:\n{sql}"))
        });
    }
}

impl Drop for Fixture {
    /// Hands the slot back to this process's idle slots, or drops a
    /// patched one's schema (its lock goes with its connection).
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.lock().expect("slot").take() else {
            return;
        };
        if !*self.patched.get_mut() {
            IDLE_SLOTS
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(slot);
            return;
        }
        if let Ok(row) = slot.reader.query_one(
            "SELECT format('DROP SCHEMA IF EXISTS %I CASCADE', $1::text)",
            &[&slot.schema],
        ) {
            let _ = slot.reader.batch_execute(row.get::<_, &str>(0));
        }
    }
}

/// A scratch database's tables, in a transaction that will be rolled back.
pub struct Scratch<'s> {
    /// In a transaction that is always rolled back.
    tx: &'s mut Pipelined,
    statements: &'s TableStatements,
}

impl Scratch<'_> {
    /// Runs `step` under a savepoint: if it returns an error, what it wrote
    /// is rolled back and the rest stays. The savepoint, its release or
    /// its rollback go out with the next statement, so a step costs the
    /// round trips of its own statements only.
    pub fn attempt<E>(
        &mut self,
        step: impl FnOnce(&mut dyn Tables) -> Result<(), E>,
    ) -> Result<(), E> {
        self.tx.defer("SAVEPOINT step");
        let result = step(&mut PgTables::new(self.tx, self.statements));
        self.tx.defer(if result.is_ok() {
            "RELEASE SAVEPOINT step"
        } else {
            "ROLLBACK TO SAVEPOINT step; RELEASE SAVEPOINT step"
        });
        result
    }

    /// Reads (or writes) the tables as they stand.
    pub fn read<T>(&mut self, read: impl FnOnce(&mut dyn Tables) -> T) -> T {
        read(&mut PgTables::new(self.tx, self.statements))
    }
}

/// The once-only route of the test kit's judge runs on it.
impl harness::Scratch<ThisProject> for Scratch<'_> {
    fn attempt(
        &mut self,
        step: &mut dyn FnMut(&mut (dyn Tables + '_)) -> Result<(), HandlerError>,
    ) -> Result<(), HandlerError> {
        Scratch::attempt(self, step)
    }

    fn read(&mut self, read: &mut dyn FnMut(&mut (dyn Tables + '_))) {
        Scratch::read(self, read)
    }
}

/// An inbox lent to a worker; it goes back to the fixture's slot when
/// dropped (or is closed, if the fixture is gone).
struct Borrowed {
    inbox: Option<PgInbox>,
    policy: Policy,
    home: Arc<Mutex<Option<Slot>>>,
}

impl Inbox<Handlers> for Borrowed {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.inbox.as_mut().expect("lent").deliver_batch(batch)
    }
}

impl DeadLetters<Handlers> for Borrowed {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        self.inbox.as_mut().expect("lent").dead_letters()
    }

    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        self.inbox
            .as_mut()
            .expect("lent")
            .failures(consumer, message_id)
    }

    fn redrive(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        self.inbox.as_mut().expect("lent").redrive(handler, message)
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        let mut home = self
            .home
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let (Some(inbox), Some(slot)) = (self.inbox.take(), home.as_mut()) {
            slot.idle_inboxes.push((self.policy, inbox));
        }
    }
}

/// Takes the first free slot of the pool, on a new connection that holds
/// its lock from now on.
fn take_free_slot() -> Slot {
    let mut reader = Client::connect(&server_url(), postgres::NoTls)
        .unwrap_or_else(|error| panic!("{error}\n{NO_SERVER}"));
    let number = (0..)
        .find(|number: &i32| {
            reader
                .query_one(
                    "SELECT pg_try_advisory_lock(hashtext($1), $2)",
                    &[&POOL, number],
                )
                .expect("try a slot's lock")
                .get(0)
        })
        .expect("a free slot");
    // PostgreSQL cuts names at 63 bytes: the number comes first, so that
    // two slots never end up with one name.
    let mut schema = format!("inbox_test_{number}_{POOL}");
    schema.truncate(63);
    reader
        .execute("SELECT set_config('search_path', $1, false)", &[&schema])
        .expect("use the slot's schema");
    let statements = TableStatements::prepare(&mut reader).unwrap_or_else(|_| {
        // Not built yet: statements are prepared again once it is.
        build_tables(&mut reader, &schema, &slot_tables());
        TableStatements::prepare(&mut reader).expect("prepare")
    });
    Slot {
        schema,
        reader,
        statements,
        idle_inboxes: Vec::new(),
    }
}

/// Builds `slot` afresh from `tables`; its inboxes go (their statements
/// name the old tables).
fn build_slot(slot: &mut Slot, tables: &str) {
    slot.idle_inboxes.clear();
    build_tables(&mut slot.reader, &slot.schema, tables);
    slot.statements = TableStatements::prepare(&mut slot.reader).expect("prepare");
}

/// Drops `schema` and creates it again: the consumer's tables (by its own
/// migration), the tripwire, and the slot's record and reset function.
fn build_tables(client: &mut Client, schema: &str, tables: &str) {
    let drop: String = client
        .query_one(
            "SELECT format('DROP SCHEMA IF EXISTS %I CASCADE', $1::text)",
            &[&schema],
        )
        .expect("quote the schema")
        .get(0);
    client.batch_execute(&drop).expect("drop the old slot");
    Database::open(server_url(), settings(schema))
        .unwrap_or_else(|error| panic!("{error}\n{NO_SERVER}"));
    client.batch_execute(TRIPWIRES).expect("tripwires");
    client.batch_execute(RESET_SLOT).expect("the slot's record");
    client
        .execute("INSERT INTO pool_slot (tables) VALUES ($1)", &[&tables])
        .expect("record the slot");
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
