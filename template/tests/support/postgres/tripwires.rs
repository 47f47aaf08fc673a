//! Test-only objects that make PostgreSQL fail on demand, at exactly the
//! point a scenario needs: a COMMIT that fails, a handler's statement that
//! fails, a claim held by another transaction, a connection that does not
//! wait for locks.

use std::time::Duration;

use inbox_kit_testkit::harness::{self, HeldClaim};

use postgres::Client;

use {{crate_name}}::database::Exec;
use {{crate_name}}::handlers::Handlers;
use {{crate_name}}::inbox::{Inbox, Policy};
use {{crate_name}}::store::Store;

use crate::support::harness::{StatementTripwire, ThisProject};

use super::Fixture;

/// Whether two transactions of this database write at the same time: on
/// PostgreSQL they do, so a scenario may hold several inside their
/// transactions at once.
pub const CONCURRENT_WRITERS: bool = true;

/// The tripwires' tables and functions, built into every slot. Their
/// triggers are not: a trigger runs on every row written, armed or not,
/// and those on the inbox run for every claim, so with all of them in
/// place one iteration of the 4 x 50 parallel scenario took 67 ms instead
/// of 41 (BENCHMARKS.md). Each is installed by the first arming of its
/// tripwire ([`Tripwire::install`]) and dropped by the next fixture's
/// reset (`tripwires_remove`).
///
/// * Commit tripwire: while `tripwire_armed` has a row, every row a handler
///   writes also writes a row that breaks a deferred foreign key, checked
///   only when the transaction commits, so the COMMIT fails. Its trigger is
///   on every handler table (every table of the schema but the inbox's and
///   the tripwires'), not on the inbox: a commit that fails must be the
///   delivery's, whatever connection wrote the inbox row.
/// * Debit tripwire: a debit of a payment listed in `debit_tripwire` fails
///   at its statement. (PostgreSQL has no statement that ends the whole
///   transaction from inside it: an error aborts it until a savepoint is
///   rolled back to.)
/// * Claim tripwire: an inbox row of a message listed in `claim_tripwire`
///   is refused by a constraint of the database's own (a trigger raising
///   `check_violation`), which is not a duplicate key.
/// * Conflict tripwire: the inbox row of a message listed in
///   `conflict_tripwire` fails with a serialization failure, as a lost race
///   does, while `conflict_tries` (a sequence: a rollback does not undo
///   it) has counted fewer tries than the row's `times`.
pub(super) const TRIPWIRES: &str = "
CREATE TABLE tripwire_armed (armed boolean NOT NULL);
CREATE TABLE tripwire_target (id integer PRIMARY KEY);
CREATE TABLE tripwire (
    target integer REFERENCES tripwire_target (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE FUNCTION tripwire_on_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tripwire_armed) THEN
        INSERT INTO tripwire (target) VALUES (-1);
    END IF;
    RETURN NULL;
END $$;
CREATE TABLE debit_tripwire (payment_id text COLLATE \"C\" PRIMARY KEY);
CREATE FUNCTION debit_tripwire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM debit_tripwire WHERE payment_id = NEW.payment_id) THEN
        RAISE EXCEPTION 'tripwire: this debit fails' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TABLE claim_tripwire (message_id text COLLATE \"C\" PRIMARY KEY);
CREATE FUNCTION claim_tripwire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM claim_tripwire WHERE message_id = NEW.message_id) THEN
        RAISE EXCEPTION 'tripwire: this claim is refused' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TABLE conflict_tripwire (message_id text COLLATE \"C\" PRIMARY KEY, times bigint NOT NULL);
CREATE SEQUENCE conflict_tries;
CREATE FUNCTION conflict_tripwire() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    allowed bigint;
BEGIN
    SELECT times INTO allowed FROM conflict_tripwire WHERE message_id = NEW.message_id;
    IF FOUND THEN
        IF nextval('conflict_tries') <= allowed THEN
            RAISE EXCEPTION 'tripwire: this claim lost a race' USING ERRCODE = 'serialization_failure';
        END IF;
    END IF;
    RETURN NEW;
END $$;
-- Puts trigger `name` on `table_name`, running function `name` for each
-- row inserted, unless it is there already.
CREATE FUNCTION tripwire_install(name text, table_name text, timing text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger
                   WHERE tgname = name AND tgrelid = format('%I', table_name)::regclass) THEN
        EXECUTE format('CREATE TRIGGER %I %s INSERT ON %I FOR EACH ROW EXECUTE FUNCTION %I()',
                       name, timing, table_name, name);
    END IF;
END $$;
-- Drops every tripwire trigger of the schema: it is then as the
-- consumer's own migration leaves it, apart from the tripwires' unused
-- tables and functions.
CREATE FUNCTION tripwires_remove() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    installed record;
BEGIN
    FOR installed IN
        SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE NOT t.tgisinternal AND t.tgname LIKE '%tripwire%'
          AND c.relnamespace = current_schema()::regnamespace
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %I', installed.tgname, installed.relname);
    END LOOP;
END $$;";

/// How long installing a trigger may wait for the transactions writing
/// its table: a scenario that arms a tripwire while one of its own
/// transactions holds the table would otherwise hang instead of failing.
const INSTALL_WAIT: &str = "60s";

/// The tripwires whose triggers a test installs by arming them.
#[derive(Clone, Copy, Debug)]
enum Tripwire {
    Commit,
    Debit,
    Claim,
    Conflict,
}

impl Tripwire {
    /// Installs this tripwire's trigger in the fixture's schema, unless it
    /// is there already.
    fn install(self, fixture: &Fixture) {
        let triggers = match self {
            // On every handler table, whatever handlers this project has.
            Self::Commit => {
                "SELECT tripwire_install('tripwire_on_write', tablename, 'AFTER')
                 FROM pg_tables
                 WHERE schemaname = current_schema()
                   AND tablename NOT IN ('inbox', 'attempts', 'dead_letters', 'tripwire_armed',
                                         'tripwire_target', 'tripwire', 'debit_tripwire',
                                         'claim_tripwire', 'conflict_tripwire', 'pool_slot')"
            }
            Self::Debit => "SELECT tripwire_install('debit_tripwire', 'debits', 'BEFORE')",
            Self::Claim => "SELECT tripwire_install('claim_tripwire', 'inbox', 'BEFORE')",
            Self::Conflict => "SELECT tripwire_install('conflict_tripwire', 'inbox', 'BEFORE')",
        };
        fixture.run_sql(&format!(
            "SET LOCAL lock_timeout = '{INSTALL_WAIT}'; {triggers};"
        ));
    }
}

/// A transaction of another connection that holds an inbox row, claimed
/// and not committed, until released.
pub struct ClaimHolder {
    client: Client,
}

impl HeldClaim for ClaimHolder {
    fn release(mut self: Box<Self>) {
        self.client
            .batch_execute("ROLLBACK")
            .expect("roll back the claim");
    }
}

impl Fixture {
    /// How many tripwire triggers this fixture's schema has now: none
    /// until a test arms a tripwire.
    pub fn tripwire_triggers(&self) -> usize {
        let installed: i64 = self.with_reader(|client, _| {
            client
                .query_one(
                    "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                     WHERE NOT t.tgisinternal AND t.tgname LIKE '%tripwire%'
                       AND c.relnamespace = current_schema()::regnamespace",
                    &[],
                )
                .expect("count the tripwire triggers")
                .get(0)
        });
        usize::try_from(installed).expect("a count is never negative")
    }

    /// How many connections working in this fixture's schema wait for a
    /// lock now (a row another transaction holds): a worker that waits
    /// there cannot move until that transaction ends. A row lock's waiter
    /// holds a lock on the row's table (the tuple lock), so it is found by
    /// the schema of the tables it holds locks on.
    pub fn waiting_on_locks(&self) -> usize {
        let waiting: i64 = self.with_reader(|client, _| {
            client
                .query_one(
                    "SELECT count(DISTINCT waiter.pid) FROM pg_locks waiter
                     WHERE NOT waiter.granted AND EXISTS (
                         SELECT 1 FROM pg_locks held
                         JOIN pg_class c ON c.oid = held.relation
                         WHERE held.pid = waiter.pid
                           AND c.relnamespace = current_schema()::regnamespace)",
                    &[],
                )
                .expect("count the connections waiting for a lock")
                .get(0)
        });
        usize::try_from(waiting).expect("a count is never negative")
    }

    /// How many other connections hold a lock on a table of this fixture's
    /// schema now. A connection a test drops (as a killed process's
    /// closes) ends on the server a moment later, not at once: its rows
    /// stay locked, and skipped by `SKIP LOCKED`, until this reaches 0.
    pub fn sessions_holding_locks(&self) -> usize {
        let holding: i64 = self.with_reader(|client, _| {
            client
                .query_one(
                    "SELECT count(DISTINCT held.pid) FROM pg_locks held
                     JOIN pg_class c ON c.oid = held.relation
                     WHERE held.granted AND held.pid <> pg_backend_pid()
                       AND c.relnamespace = current_schema()::regnamespace",
                    &[],
                )
                .expect("count the connections holding locks")
                .get(0)
        });
        usize::try_from(holding).expect("a count is never negative")
    }

    /// From now on, every COMMIT of a transaction in which a handler wrote
    /// fails (`true`), or none does (`false`).
    pub fn fail_commits(&self, fail: bool) {
        if fail {
            Tripwire::Commit.install(self);
        }
        self.run_sql(if fail {
            "INSERT INTO tripwire_armed VALUES (true);"
        } else {
            "DELETE FROM tripwire_armed;"
        });
    }

    /// From now on, the database refuses the inbox row of each of
    /// `message_ids` (for any consumer), with an error that is not a
    /// duplicate key.
    pub fn refuse_claims(&self, message_ids: &[&str]) {
        self.arm(
            Tripwire::Claim,
            "INSERT INTO claim_tripwire (message_id) VALUES ($1) ON CONFLICT DO NOTHING",
            message_ids,
        );
    }

    /// Installs `tripwire` and runs `insert` (one parameter) for each of
    /// `keys`, which arms it for them.
    fn arm(&self, tripwire: Tripwire, insert: &str, keys: &[&str]) {
        tripwire.install(self);
        self.with_reader(|client, _| {
            for key in keys {
                client
                    .execute(insert, &[key])
                    .unwrap_or_else(|error| panic!("arm the tripwire ({insert}): {error}"));
            }
        });
    }

    /// Claims are no longer refused.
    pub fn heal_claims(&self) {
        self.run_sql("DELETE FROM claim_tripwire;");
    }

    /// Races lost on demand (the conflict tripwire): PostgreSQL has them.
    pub fn conflicts(&self) -> Option<Conflicts<'_>> {
        Some(Conflicts { fixture: self })
    }

    /// Another connection claims (consumer, id) in a transaction it keeps
    /// open: a claim of the same key waits for it.
    pub fn hold_claim(&self, consumer: &str, id: &str) -> ClaimHolder {
        let mut client = self.database().connect().expect("connect");
        client.batch_execute("BEGIN").expect("begin");
        client
            .execute(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, 0)",
                &[&consumer, &id],
            )
            .expect("claim");
        ClaimHolder { client }
    }

    /// The real inbox, giving up on a lock after `wait` (`lock_timeout`).
    pub fn impatient_inbox(&self, policy: Policy, wait: Duration) -> Box<dyn Inbox<Handlers>> {
        let mut inbox = self.database().inbox(policy).expect("open inbox");
        inbox
            .client()
            .expect("the inbox's connection")
            .execute(
                "SELECT set_config('lock_timeout', $1, false)",
                &[&format!("{}ms", wait.as_millis())],
            )
            .expect("set lock_timeout");
        Box::new(inbox)
    }
}

/// Claims that lose a race on demand, through the conflict tripwire.
pub struct Conflicts<'a> {
    fixture: &'a Fixture,
}

impl harness::Conflicts for Conflicts<'_> {
    /// How many times the inbox tries a batch again after it lost a race,
    /// before it reports the conflict.
    fn retries(&self) -> u32 {
        {{crate_name}}::database::CONFLICT_RETRIES
    }

    /// From now on, the next `times` tries to claim `message_id` lose a
    /// race (a serialization failure); the tries after them succeed.
    fn lose_claims(&self, message_id: &str, times: u32) {
        Tripwire::Conflict.install(self.fixture);
        let allowed = self.tries() + u64::from(times);
        self.fixture.run_sql(&format!(
            "INSERT INTO conflict_tripwire (message_id, times) VALUES ('{}', {allowed})
             ON CONFLICT (message_id) DO UPDATE SET times = excluded.times;",
            message_id.replace('\'', "''")
        ));
    }

    /// How many claims of tripped messages were tried so far, rolled back
    /// or not.
    fn tries(&self) -> u64 {
        self.fixture.with_reader(|client, _| {
            let tries: i64 = client
                .query_one(
                    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM conflict_tries",
                    &[],
                )
                .expect("read the tries")
                .get(0);
            u64::try_from(tries).expect("a count is never negative")
        })
    }
}

/// `debit`'s own tripwire, made when a test first arms it.
impl StatementTripwire<ThisProject> for Fixture {
    fn fail_statements(&self, payment_ids: &[&str]) {
        self.arm(
            Tripwire::Debit,
            "INSERT INTO debit_tripwire (payment_id) VALUES ($1) ON CONFLICT DO NOTHING",
            payment_ids,
        );
    }

    fn end_transaction_at(&self, _payment_ids: &[&str]) -> bool {
        false
    }

    fn heal_statements(&self) {
        self.run_sql("DELETE FROM debit_tripwire;");
    }
}
