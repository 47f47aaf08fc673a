//! Test-only objects that make SQLite fail on demand, at exactly the
//! point a scenario needs: a COMMIT that fails, a claim refused or held by
//! another transaction, a connection that does not wait for locks. (A
//! tripwire on one handler's statement is in `statements`: the project
//! names the table.)

use std::time::Duration;

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::inbox::Policy;
use inbox_kit_runtime::sqlite::{Database, Settings};
use inbox_kit_runtime::store::Store;
use rusqlite::Connection;

use super::{SqliteFixture, SqliteTest};
use crate::harness::{self, HeldClaim, Tripwires};

/// Whether two transactions of this database write at the same time. On
/// SQLite they never do (`BEGIN IMMEDIATE` takes the one write lock), so
/// a scenario must not hold a transaction open waiting for another one.
pub const CONCURRENT_WRITERS: bool = false;

/// The tripwires' own tables and triggers.
///
/// * Commit tripwire: while `tripwire_armed` has a row, every row a handler
///   writes also writes a row that breaks a deferred foreign key, checked
///   by SQLite only when the transaction commits, so the COMMIT fails. Its
///   triggers are on every handler table (see [`arm_commit_tripwire`]),
///   not on the inbox: a commit that fails must be the delivery's, whatever
///   connection wrote the inbox row.
/// * Claim tripwire: an inbox row of a message listed in `claim_tripwire`
///   is refused by a constraint of the database's own (a trigger's
///   `RAISE(ABORT)`), which is not a duplicate key.
pub(super) const TRIPWIRES: &str = "
CREATE TABLE tripwire_armed (armed INTEGER NOT NULL);
CREATE TABLE tripwire_target (id INTEGER PRIMARY KEY);
CREATE TABLE tripwire (
    target INTEGER REFERENCES tripwire_target (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE TABLE claim_tripwire (message_id TEXT PRIMARY KEY);
CREATE TRIGGER claim_tripwire BEFORE INSERT ON inbox
WHEN EXISTS (SELECT 1 FROM claim_tripwire WHERE message_id = NEW.message_id)
BEGIN
    SELECT RAISE(ABORT, 'tripwire: this claim is refused');
END;";

/// The inbox's own tables, and the tripwires': every other table is a
/// handler's (a project's own tripwires are made later, when a test arms
/// them, and hold no trigger of this one).
const NOT_HANDLER_TABLES: &str = "'inbox', 'attempts', 'dead_letters', 'tripwire_armed', 'tripwire_target', 'tripwire', 'claim_tripwire'";

/// Puts the commit tripwire's trigger on every handler table, whatever
/// handlers this project has.
pub(super) fn arm_commit_tripwire(db: &Connection) {
    let mut statement = db
        .prepare(&format!(
            "SELECT name FROM sqlite_master WHERE type = 'table'
             AND name NOT IN ({NOT_HANDLER_TABLES}) AND name NOT LIKE 'sqlite_%'"
        ))
        .expect("list the tables");
    let tables: Vec<String> = statement
        .query_map([], |row| row.get(0))
        .expect("list the tables")
        .collect::<Result<_, _>>()
        .expect("table names");
    for table in tables {
        db.execute_batch(&format!(
            "CREATE TRIGGER \"tripwire_on_{table}\" AFTER INSERT ON \"{table}\"
             WHEN EXISTS (SELECT 1 FROM tripwire_armed)
             BEGIN
                 INSERT INTO tripwire (target) VALUES (-1);
             END;"
        ))
        .expect("commit tripwire");
    }
}

/// Drops every tripwire trigger: the database is then as the consumer's
/// own migration leaves it, apart from the tripwires' unused tables. For
/// the benchmarks, which measure the consumer, not the triggers (each
/// fires on every row written, armed or not).
pub(super) fn disarm(db: &Connection) {
    let triggers: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%tripwire%'")
        .expect("list the tripwires")
        .query_map([], |row| row.get(0))
        .expect("list the tripwires")
        .collect::<Result<_, _>>()
        .expect("tripwire names");
    for trigger in triggers {
        db.execute_batch(&format!("DROP TRIGGER \"{trigger}\""))
            .expect("drop a tripwire");
    }
}

/// A transaction of another connection that holds an inbox row, claimed
/// and not committed, until released.
pub struct ClaimHolder {
    db: Connection,
}

impl HeldClaim for ClaimHolder {
    fn release(self: Box<Self>) {
        self.db
            .execute_batch("ROLLBACK")
            .expect("roll back the claim");
    }
}

impl<P: SqliteTest> SqliteFixture<P> {
    /// How many tripwire triggers this fixture's database has now.
    pub fn tripwire_triggers(&self) -> usize {
        let db = self.database().connect().expect("connect");
        let installed: i64 = db
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%tripwire%'",
                [],
                |row| row.get(0),
            )
            .expect("count the tripwire triggers");
        usize::try_from(installed).expect("a count is never negative")
    }

    /// How many other connections hold a lock now: none once a test dropped
    /// them, since closing an SQLite connection releases its locks before
    /// the call returns.
    pub fn sessions_holding_locks(&self) -> usize {
        0
    }

    /// How many connections wait for a lock now: none a scenario can count
    /// (a connection waiting for SQLite's write lock retries inside the
    /// library), and no scenario holds a writer open for another one here
    /// ([`CONCURRENT_WRITERS`]).
    pub fn waiting_on_locks(&self) -> usize {
        0
    }

    /// From now on, every COMMIT of a transaction in which a handler wrote
    /// fails (`true`), or none does (`false`).
    pub fn fail_commits(&self, fail: bool) {
        self.execute(if fail {
            "INSERT INTO tripwire_armed VALUES (1);"
        } else {
            "DELETE FROM tripwire_armed;"
        });
    }

    /// From now on, the database refuses the inbox row of each of
    /// `message_ids` (for any consumer), with an error that is not a
    /// duplicate key.
    pub fn refuse_claims(&self, message_ids: &[&str]) {
        let db = self.database().connect().expect("connect");
        for id in message_ids {
            db.execute("INSERT OR IGNORE INTO claim_tripwire VALUES (?1)", [id])
                .expect("arm the claim tripwire");
        }
    }

    /// Claims are no longer refused.
    pub fn heal_claims(&self) {
        self.execute("DELETE FROM claim_tripwire;");
    }

    /// Another connection claims (consumer, id) in a transaction it keeps
    /// open: on SQLite, that holds the one write lock.
    pub fn hold_claim(&self, consumer: &str, id: &str) -> ClaimHolder {
        let db = self.database().connect().expect("connect");
        db.execute_batch("BEGIN IMMEDIATE").expect("begin");
        db.execute(
            "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, 0)",
            [consumer, id],
        )
        .expect("claim");
        ClaimHolder { db }
    }

    /// The real inbox, giving up on a lock after `wait`.
    pub fn impatient_inbox(&self, policy: Policy, wait: Duration) -> Box<dyn Inbox<P::Registry>> {
        let settings = Settings {
            lock_wait: wait,
            ..Settings::default()
        };
        let database = Database::<P::Registry>::new(self.location(), settings);
        Box::new(database.inbox(policy).expect("open inbox"))
    }
}

/// The faults the harness sets off: the methods of the same names above.
impl<P: SqliteTest> Tripwires<P::Registry> for SqliteFixture<P> {
    fn fail_commits(&self, on: bool) {
        SqliteFixture::fail_commits(self, on)
    }

    fn refuse_claims(&self, message_ids: &[&str]) {
        SqliteFixture::refuse_claims(self, message_ids)
    }

    fn heal_claims(&self) {
        SqliteFixture::heal_claims(self)
    }

    fn hold_claim(&self, consumer: &str, id: &str) -> Box<dyn HeldClaim> {
        Box::new(SqliteFixture::hold_claim(self, consumer, id))
    }

    /// `None`: SQLite has no races to lose (one writer at a time, which
    /// waits for the lock instead), so nothing retries a conflict.
    fn conflicts(&self) -> Option<Box<dyn harness::Conflicts + '_>> {
        None
    }

    fn impatient_inbox(&self, policy: Policy, wait: Duration) -> Box<dyn Inbox<P::Registry>> {
        SqliteFixture::impatient_inbox(self, policy, wait)
    }
}
