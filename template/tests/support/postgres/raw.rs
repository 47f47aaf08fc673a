//! [`Raw`] on PostgreSQL: one connection, one statement at a time.

use postgres::Client;

use {{crate_name}}::database::{PgTables, TableStatements};
use {{crate_name}}::handler::HandlerError;
use {{crate_name}}::handlers::BorrowedHandler;
use {{crate_name}}::inbox::{DeadLetter, StorageError};
use {{crate_name}}::message::Message;

use crate::support::harness::{Raw, ThisProject};

pub struct PgRaw {
    client: Client,
    statements: TableStatements,
}

impl PgRaw {
    pub fn new(mut client: Client) -> Self {
        let statements = TableStatements::prepare(&mut client).expect("prepare");
        Self { client, statements }
    }

    /// The connection itself, for traps that need PostgreSQL's own
    /// behaviour.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

impl Raw<ThisProject> for PgRaw {
    fn begin(&mut self) -> Result<(), StorageError> {
        Ok(self.client.batch_execute("BEGIN")?)
    }

    fn commit(&mut self) -> Result<(), StorageError> {
        Ok(self.client.batch_execute("COMMIT")?)
    }

    fn rollback(&mut self) {
        let _ = self.client.batch_execute("ROLLBACK");
    }

    fn is_recorded(&mut self, consumer: &str, id: &str) -> Result<bool, StorageError> {
        Ok(self
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM inbox WHERE consumer = $1 AND message_id = $2)",
                &[&consumer, &id],
            )?
            .get(0))
    }

    fn record(&mut self, consumer: &str, id: &str, received_at: i64) -> Result<bool, StorageError> {
        let inserted = self.client.query_opt(
            "INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING RETURNING 1",
            &[&consumer, &id, &received_at],
        )?;
        Ok(inserted.is_some())
    }

    fn apply(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<(), HandlerError> {
        handler.apply(
            &mut PgTables::new(&mut self.client, &self.statements),
            message,
        )
    }

    fn apply_all(
        &mut self,
        handler: &BorrowedHandler<'_>,
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        let set_based = handler.set_based().expect("a run has a set-based path");
        set_based.apply_all(
            &mut PgTables::new(&mut self.client, &self.statements),
            messages,
        )
    }

    fn run(&mut self, sql: &str) -> Result<(), StorageError> {
        Ok(self.client.batch_execute(sql)?)
    }

    fn count(&mut self, sql: &str) -> Result<u64, StorageError> {
        let count: i64 = self.client.query_one(sql, &[])?.get(0);
        Ok(count.unsigned_abs())
    }

    fn count_failure(
        &mut self,
        consumer: &str,
        id: &str,
        error: &str,
        at: i64,
    ) -> Result<u32, StorageError> {
        let failures: i32 = self
            .client
            .query_one(
                "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
                 VALUES ($1, $2, 1, $3, $4)
                 ON CONFLICT (consumer, message_id) DO UPDATE
                    SET failures = attempts.failures + 1, last_failed_at = excluded.last_failed_at
                 RETURNING failures",
                &[&consumer, &id, &error, &at],
            )?
            .get(0);
        Ok(failures.unsigned_abs())
    }

    fn failures(&mut self, consumer: &str, id: &str) -> Result<u32, StorageError> {
        let row = self.client.query_opt(
            "SELECT failures FROM attempts WHERE consumer = $1 AND message_id = $2",
            &[&consumer, &id],
        )?;
        Ok(row.map_or(0, |row| row.get::<_, i32>(0).unsigned_abs()))
    }

    fn dead_letter(&mut self, letter: &DeadLetter) -> Result<(), StorageError> {
        let attempts = i32::try_from(letter.attempts).unwrap_or(i32::MAX);
        self.client.execute(
            "INSERT INTO dead_letters
                (consumer, message_id, event_type, payload, error, attempts, refused, dead_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (consumer, message_id) DO UPDATE
                SET error = excluded.error, attempts = excluded.attempts,
                    refused = excluded.refused, dead_at = excluded.dead_at",
            &[
                &letter.consumer,
                &letter.message_id,
                &letter.event_type,
                &letter.payload,
                &letter.error,
                &attempts,
                &letter.refused,
                &letter.dead_at,
            ],
        )?;
        Ok(())
    }

    fn delete_inbox_row(&mut self, consumer: &str, id: &str) -> Result<(), StorageError> {
        self.client.execute(
            "DELETE FROM inbox WHERE consumer = $1 AND message_id = $2",
            &[&consumer, &id],
        )?;
        Ok(())
    }

    fn delete_dead_letter(&mut self, consumer: &str, id: &str) -> Result<(), StorageError> {
        self.client.execute(
            "DELETE FROM dead_letters WHERE consumer = $1 AND message_id = $2",
            &[&consumer, &id],
        )?;
        Ok(())
    }
}
