//! [`Raw`] on SQLite: one connection, one statement at a time.

use std::marker::PhantomData;

use inbox_kit_runtime::handler::HandlerError;
use inbox_kit_runtime::inbox::DeadLetter;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::sqlite::SqliteHandlers;
use inbox_kit_runtime::storage::StorageError;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::SqliteTest;
use crate::harness::{HandlerOf, Raw};

/// One connection of project `P`'s database, one statement at a time.
pub struct SqliteRaw<P> {
    db: Connection,
    project: PhantomData<fn() -> P>,
}

impl<P> SqliteRaw<P> {
    pub fn new(db: Connection) -> Self {
        Self {
            db,
            project: PhantomData,
        }
    }

    /// The connection itself, for traps that need SQLite's own behaviour.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.db
    }
}

impl<P: SqliteTest> Raw<P> for SqliteRaw<P> {
    fn begin(&mut self) -> Result<(), StorageError> {
        Ok(self.db.execute_batch("BEGIN IMMEDIATE")?)
    }

    fn commit(&mut self) -> Result<(), StorageError> {
        Ok(self.db.execute_batch("COMMIT")?)
    }

    fn rollback(&mut self) {
        if !self.db.is_autocommit() {
            let _ = self.db.execute_batch("ROLLBACK");
        }
    }

    fn is_recorded(&mut self, consumer: &str, id: &str) -> Result<bool, StorageError> {
        Ok(self.db.query_row(
            "SELECT EXISTS (SELECT 1 FROM inbox WHERE consumer = ?1 AND message_id = ?2)",
            params![consumer, id],
            |row| row.get(0),
        )?)
    }

    fn record(&mut self, consumer: &str, id: &str, received_at: i64) -> Result<bool, StorageError> {
        match self.db.execute(
            "INSERT INTO inbox (consumer, message_id, received_at) VALUES (?1, ?2, ?3)",
            params![consumer, id, received_at],
        ) {
            Ok(_) => Ok(true),
            Err(error) if error.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) => {
                Ok(false)
            }
            Err(error) => Err(error.into()),
        }
    }

    fn apply(
        &mut self,
        handler: &HandlerOf<'_, P>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError> {
        P::Registry::apply(handler, &self.db, message)
    }

    fn apply_all(
        &mut self,
        handler: &HandlerOf<'_, P>,
        messages: &[&Message<P::Event>],
    ) -> Result<(), HandlerError> {
        assert!(handler.set_based().is_some(), "a run has a set-based path");
        P::Registry::apply_all(handler, &self.db, messages)
    }

    fn run(&mut self, sql: &str) -> Result<(), StorageError> {
        Ok(self.db.execute_batch(sql)?)
    }

    fn count(&mut self, sql: &str) -> Result<u64, StorageError> {
        let count: i64 = self.db.query_row(sql, [], |row| row.get(0))?;
        Ok(count.unsigned_abs())
    }

    fn count_failure(
        &mut self,
        consumer: &str,
        id: &str,
        error: &str,
        at: i64,
    ) -> Result<u32, StorageError> {
        Ok(self.db.query_row(
            "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
             VALUES (?1, ?2, 1, ?3, ?4)
             ON CONFLICT (consumer, message_id) DO UPDATE
                SET failures = failures + 1, last_failed_at = excluded.last_failed_at
             RETURNING failures",
            params![consumer, id, error, at],
            |row| row.get(0),
        )?)
    }

    fn failures(&mut self, consumer: &str, id: &str) -> Result<u32, StorageError> {
        Ok(self
            .db
            .query_row(
                "SELECT failures FROM attempts WHERE consumer = ?1 AND message_id = ?2",
                params![consumer, id],
                |row| row.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }

    fn dead_letter(&mut self, letter: &DeadLetter) -> Result<(), StorageError> {
        self.db.execute(
            "INSERT OR REPLACE INTO dead_letters
                (consumer, message_id, event_type, payload, error, attempts, refused, dead_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                letter.consumer,
                letter.message_id,
                letter.event_type,
                letter.payload,
                letter.error,
                letter.attempts,
                letter.refused,
                letter.dead_at
            ],
        )?;
        Ok(())
    }

    fn delete_inbox_row(&mut self, consumer: &str, id: &str) -> Result<(), StorageError> {
        self.db.execute(
            "DELETE FROM inbox WHERE consumer = ?1 AND message_id = ?2",
            params![consumer, id],
        )?;
        Ok(())
    }

    fn delete_dead_letter(&mut self, consumer: &str, id: &str) -> Result<(), StorageError> {
        self.db.execute(
            "DELETE FROM dead_letters WHERE consumer = ?1 AND message_id = ?2",
            params![consumer, id],
        )?;
        Ok(())
    }
}
