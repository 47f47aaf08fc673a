//! The PostgreSQL inbox under the stand-in consumers' scenarios
//! (`stand_ins/mod.rs`), each in a schema of its own, dropped after.
//!
//! Needs PostgreSQL at `DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); without one it fails, saying
//! so.

#[macro_use]
mod stand_ins;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::handler::Subscriber;
use inbox_kit_runtime::storage::StorageFault;

use inbox_kit_runtime::handler::{Handler, HandlerError, Registry};
use inbox_kit_runtime::inbox::{Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::postgres::{
    CONFLICT_RETRIES, Connect, Exec, PgHandlers, PgInbox, Pipelined, SCHEMA,
};
use inbox_kit_runtime::storage::StorageError;
use postgres::{Client, NoTls};
use stand_ins::{Amounts, Bulk, Credit, TABLES, message};

/// The stand-ins' tables: the delivery's transaction. Their errors are
/// passed on as `StorageError`s, as a project's tables do, so that a fault
/// of the database is told apart from a failure of the message.
struct Total<'c>(&'c mut Pipelined);

impl Amounts for Total<'_> {
    fn add(&mut self, amount: i64) -> Result<(), HandlerError> {
        self.0
            .execute("UPDATE total SET sum = sum + $1", &[&amount])
            .map_err(StorageError::from)?;
        Ok(())
    }

    fn in_outage(&mut self) -> Result<bool, HandlerError> {
        Ok(self
            .0
            .query_one("SELECT count(*) > 0 FROM outage", &[])
            .map_err(StorageError::from)?
            .get(0))
    }
}

/// The stand-ins, registered for PostgreSQL.
struct Stands;

type Stand<'a> = dyn for<'c> Handler<i64, Total<'c>> + 'a;

impl Registry for Stands {
    type Event = i64;
    type Handler<'a> = Stand<'a>;
    fn has_set_based(handler: &Stand<'_>) -> bool {
        handler.set_based().is_some()
    }
    fn encode(amount: &i64) -> (&'static str, String) {
        stand_ins::encode(amount)
    }
    fn partition_key(amount: &i64) -> u64 {
        stand_ins::partition_key(amount)
    }
    fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a> {
        handler
    }
}

impl PgHandlers for Stands {
    /// The stand-ins run plain SQL: nothing to prepare.
    type Statements = ();

    fn prepare(_: &mut Pipelined) -> Result<(), StorageError> {
        Ok(())
    }
    fn apply(
        handler: &Stand<'_>,
        tx: &mut Pipelined,
        _: &(),
        message: &Message<i64>,
    ) -> Result<(), HandlerError> {
        handler.apply(&mut Total(tx), message)
    }
    fn apply_all(
        handler: &Stand<'_>,
        tx: &mut Pipelined,
        _: &(),
        messages: &[&Message<i64>],
    ) -> Result<(), HandlerError> {
        let set_based = handler
            .set_based()
            .expect("only called with a set-based path");
        set_based.apply_all(&mut Total(tx), messages)
    }
}

fn server_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Connections to one schema.
#[derive(Clone)]
struct Schema {
    name: String,
}

impl Schema {
    fn client(&self) -> Client {
        let url = server_url();
        let mut client = Client::connect(&url, NoTls).unwrap_or_else(|error| {
            panic!(
                "these tests need PostgreSQL at DATABASE_URL ({url}): start one \
                 (e.g. `pg_ctlcluster 15 main start`) or point DATABASE_URL at one ({error})"
            )
        });
        client
            .batch_execute(&format!("SET search_path = {}", self.name))
            .expect("the schema");
        client
    }
}

impl Connect for Schema {
    fn inbox_connection(&self) -> Result<Pipelined, StorageError> {
        let config = server_url().parse().expect("a valid DATABASE_URL");
        let mut connection = Pipelined::connect(&config)?;
        connection.batch_execute(&format!("SET search_path = {}", self.name))?;
        Ok(connection)
    }
}

/// A schema of its own with every table, dropped with it.
struct Postgres {
    schema: Schema,
}

impl Postgres {
    fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "runtime_inbox_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let schema = Schema { name };
        let mut client = schema.client();
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {0} CASCADE; CREATE SCHEMA {0}; SET search_path = {0}; {SCHEMA} {TABLES}",
                schema.name
            ))
            .expect("the tables");
        Self { schema }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .schema
            .client()
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.schema.name));
    }
}

impl stand_ins::Database for Postgres {
    type Stands = Stands;
    type Inbox = PgInbox<Stands, Schema>;

    fn inbox(&self, max_attempts: u32) -> PgInbox<Stands, Schema> {
        PgInbox::new(self.schema.clone(), Policy { max_attempts }).expect("an inbox connection")
    }
    fn credit<'a>() -> &'a Stand<'a> {
        &Credit
    }
    fn credit_held() -> Arc<Stand<'static>> {
        Arc::new(Credit)
    }
    fn claims(&self) -> Arc<dyn Fn(&str) -> i64 + Send + Sync> {
        let schema = self.schema.clone();
        Arc::new(move |id| {
            schema
                .client()
                .query_one("SELECT count(*) FROM inbox WHERE message_id = $1", &[&id])
                .expect("a count")
                .get(0)
        })
    }

    fn bulk<'a>(bulk: &'a Bulk) -> &'a Stand<'a> {
        bulk
    }
    fn execute(&self, sql: &str) {
        self.schema.client().batch_execute(sql).expect("plain SQL");
    }
    fn refuse_claims_of(&self, message_id: Option<&str>) {
        let sql = match message_id {
            Some(id) => format!(
                "CREATE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN RAISE EXCEPTION 'claim refused' USING ERRCODE = '23514'; END $$;
                 CREATE TRIGGER refuse_claims BEFORE INSERT ON inbox FOR EACH ROW
                 WHEN (NEW.message_id = '{id}') EXECUTE FUNCTION refuse_claim()"
            ),
            None => "DROP TRIGGER refuse_claims ON inbox; DROP FUNCTION refuse_claim()".to_owned(),
        };
        self.execute(&sql);
    }
    fn number(&self, sql: &str) -> i64 {
        self.schema
            .client()
            .query_one(sql, &[])
            .expect("a number")
            .get(0)
    }
}

every_scenario!(Postgres::new());

/// A stand-in that loses a race (the server raises `code`) on its first
/// `losses` tries, then adds the amount; counts its tries.
struct Racy {
    code: &'static str,
    losses: u32,
    tries: AtomicU32,
}

impl Racy {
    fn new(code: &'static str, losses: u32) -> Self {
        Self {
            code,
            losses,
            tries: AtomicU32::new(0),
        }
    }
}

impl Subscriber<i64> for Racy {
    fn consumer(&self) -> &'static str {
        "racy"
    }
    fn subscribes_to(&self, _: &i64) -> bool {
        true
    }
}

impl<'c> Handler<i64, Total<'c>> for Racy {
    fn apply(&self, total: &mut Total<'c>, message: &Message<i64>) -> Result<(), HandlerError> {
        if self.tries.fetch_add(1, Ordering::SeqCst) < self.losses {
            let raise = format!(
                "DO $$ BEGIN RAISE EXCEPTION 'lost a race' USING ERRCODE = '{}'; END $$",
                self.code
            );
            total.0.batch_execute(&raise).map_err(StorageError::from)?;
        }
        total.add(message.event)
    }
}

/// Serialization failures are nobody's fault: the whole batch is tried
/// again, up to [`CONFLICT_RETRIES`] more times, and applies once.
#[test]
fn a_batch_that_lost_a_race_is_tried_again_until_it_applies() {
    let db = Postgres::new();
    let racy = Racy::new("40001", 3);
    let mut inbox = stand_ins::Database::inbox(&db, 3);
    let outcome = inbox.deliver(&racy as &Stand<'_>, &message("m-1", 5));
    assert_eq!(outcome.unwrap(), Outcome::Applied);
    assert_eq!(racy.tries.load(Ordering::SeqCst), 4);
    assert_eq!(stand_ins::Database::number(&db, "SELECT sum FROM total"), 5);
}

/// A batch that keeps losing is tried exactly 1 + [`CONFLICT_RETRIES`]
/// times, then reported as a conflict with nothing stored or counted.
#[test]
fn a_batch_that_keeps_losing_is_reported_after_its_retries() {
    let db = Postgres::new();
    let racy = Racy::new("40P01", u32::MAX);
    let mut inbox = stand_ins::Database::inbox(&db, 3);
    let error = inbox
        .deliver(&racy as &Stand<'_>, &message("m-1", 5))
        .expect_err("every try lost");
    assert_eq!(error.fault(), StorageFault::Conflict);
    assert_eq!(racy.tries.load(Ordering::SeqCst), 1 + CONFLICT_RETRIES);
    let stored = stand_ins::Database::number(
        &db,
        "SELECT (SELECT sum FROM total) + (SELECT count(*) FROM inbox) + (SELECT count(*) FROM attempts)",
    );
    assert_eq!(stored, 0);
}

/// Any other database fault is not retried: reported at once, with
/// nothing stored or counted.
#[test]
fn a_batch_that_met_another_fault_is_not_tried_again() {
    let db = Postgres::new();
    let racy = Racy::new("57014", u32::MAX);
    let mut inbox = stand_ins::Database::inbox(&db, 3);
    let error = inbox
        .deliver(&racy as &Stand<'_>, &message("m-1", 5))
        .expect_err("a statement timeout");
    assert_eq!(error.fault(), StorageFault::Unavailable);
    assert_eq!(racy.tries.load(Ordering::SeqCst), 1);
    let stored = stand_ins::Database::number(
        &db,
        "SELECT (SELECT sum FROM total) + (SELECT count(*) FROM inbox) + (SELECT count(*) FROM attempts)",
    );
    assert_eq!(stored, 0);
}
