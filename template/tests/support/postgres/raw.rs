//! [`Raw`] on PostgreSQL: one connection, one statement at a time.

use postgres::Client;

use {{crate_name}}::database::{PgTables, TableStatements};
use {{crate_name}}::handler::{Handler, HandlerError};
use {{crate_name}}::inbox::StorageError;
use {{crate_name}}::message::Message;

use crate::support::raw::Raw;

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

impl Raw for PgRaw {
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

    fn apply(&mut self, handler: &dyn Handler, message: &Message) -> Result<(), HandlerError> {
        handler.apply(
            &mut PgTables::new(&mut self.client, &self.statements),
            message,
        )
    }

    fn count_failure(&mut self, consumer: &str, id: &str, error: &str) -> Result<(), StorageError> {
        self.client.execute(
            "INSERT INTO attempts (consumer, message_id, failures, last_error, last_failed_at)
             VALUES ($1, $2, 1, $3, 0)
             ON CONFLICT (consumer, message_id) DO UPDATE SET failures = attempts.failures + 1",
            &[&consumer, &id, &error],
        )?;
        Ok(())
    }

    fn delete_notification(&mut self, event_id: &str, channel: &str) -> Result<(), StorageError> {
        self.client.execute(
            "DELETE FROM notifications WHERE event_id = $1 AND channel = $2",
            &[&event_id, &channel],
        )?;
        Ok(())
    }
}
