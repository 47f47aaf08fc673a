//! The SQLite inbox under the stand-in consumers' scenarios
//! (`stand_ins/mod.rs`), each on a database file of its own.

#[macro_use]
mod stand_ins;

use std::sync::Arc;
use std::time::Duration;

use inbox_kit_runtime::handler::{HandlerError, Registry};
use inbox_kit_runtime::inbox::Policy;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::sqlite::{SCHEMA, SqliteHandlers, SqliteInbox};
use inbox_kit_runtime::storage::StorageError;
use rusqlite::Connection;
use stand_ins::{Amounts, Bulk, Credit, TABLES};
use tempfile::TempDir;

/// The stand-ins' tables: the delivery's connection. Their errors are
/// passed on as `StorageError`s, as a project's tables do.
struct Total<'c>(&'c Connection);

impl Amounts for Total<'_> {
    fn add(&mut self, amount: i64) -> Result<(), HandlerError> {
        self.0
            .execute("UPDATE total SET sum = sum + ?1", [amount])?;
        Ok(())
    }

    fn in_outage(&mut self) -> Result<bool, HandlerError> {
        Ok(self
            .0
            .query_row("SELECT count(*) > 0 FROM outage", [], |row| row.get(0))
            .map_err(StorageError::from)?)
    }
}

/// The stand-ins, registered for SQLite.
struct Stands;

type Stand<'a> = dyn for<'c> inbox_kit_runtime::handler::Handler<i64, Total<'c>> + 'a;

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

impl SqliteHandlers for Stands {
    fn apply(
        handler: &Stand<'_>,
        db: &Connection,
        message: &Message<i64>,
    ) -> Result<(), HandlerError> {
        handler.apply(&mut Total(db), message)
    }
    fn apply_all(
        handler: &Stand<'_>,
        db: &Connection,
        messages: &[&Message<i64>],
    ) -> Result<(), HandlerError> {
        let set_based = handler
            .set_based()
            .expect("only called with a set-based path");
        set_based.apply_all(&mut Total(db), messages)
    }
}

/// A database file of its own, in WAL mode, with every table.
struct Sqlite {
    folder: TempDir,
}

impl Sqlite {
    fn new() -> Self {
        let folder = tempfile::tempdir().expect("temporary folder");
        let sqlite = Self { folder };
        let db = sqlite.connect();
        db.pragma_update(None, "journal_mode", "WAL").unwrap();
        db.execute_batch(SCHEMA).expect("the inbox's tables");
        db.execute_batch(TABLES).expect("the stand-ins' tables");
        sqlite
    }

    fn connect(&self) -> Connection {
        let db = Connection::open(self.folder.path().join("inbox.db")).expect("open");
        db.busy_timeout(Duration::from_secs(60)).unwrap();
        db
    }
}

impl stand_ins::Database for Sqlite {
    type Stands = Stands;
    type Inbox = SqliteInbox<Stands>;

    fn inbox(&self, max_attempts: u32) -> SqliteInbox<Stands> {
        SqliteInbox::new(self.connect(), Policy { max_attempts })
    }
    fn credit<'a>() -> &'a Stand<'a> {
        &Credit
    }
    fn credit_held() -> Arc<Stand<'static>> {
        Arc::new(Credit)
    }
    fn claims(&self) -> Arc<dyn Fn(&str) -> i64 + Send + Sync> {
        let path = self.folder.path().join("inbox.db");
        Arc::new(move |id| {
            Connection::open(&path)
                .expect("open")
                .query_row(
                    "SELECT count(*) FROM inbox WHERE message_id = ?1",
                    [id],
                    |row| row.get(0),
                )
                .expect("a count")
        })
    }

    fn bulk<'a>(bulk: &'a Bulk) -> &'a Stand<'a> {
        bulk
    }
    fn execute(&self, sql: &str) {
        self.connect().execute_batch(sql).expect("plain SQL");
    }
    fn refuse_claims_of(&self, message_id: Option<&str>) {
        let sql = match message_id {
            Some(id) => format!(
                "CREATE TRIGGER refuse_claims BEFORE INSERT ON inbox WHEN NEW.message_id = '{id}'
                 BEGIN SELECT RAISE(ABORT, 'claim refused'); END"
            ),
            None => "DROP TRIGGER refuse_claims".to_owned(),
        };
        self.execute(&sql);
    }
    fn number(&self, sql: &str) -> i64 {
        self.connect()
            .query_row(sql, [], |row| row.get(0))
            .expect("a number")
    }
}

every_scenario!(Sqlite::new());
