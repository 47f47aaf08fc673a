//! The relay's queue on PostgreSQL.
//!
//! Any number of relays may share the outbox: each takes its rows with
//! `SELECT ... FOR UPDATE SKIP LOCKED` in a transaction that stays open
//! while it sends them, so another relay skips those rows instead of
//! sending them at the same time, and takes them over if this one dies
//! before marking them (the server ends the dead connection's transaction
//! and its locks with it).

use std::time::SystemTime;

use postgres::{Client, Row};

use crate::handlers::Notification;
use crate::inbox::{StorageError, unix_millis};
use crate::relay::{Outgoing, Parked, Queue, RelayPolicy, Sent, idempotency_key};

/// The outbox as one relay sees it.
pub struct PgQueue {
    client: Client,
    /// Whether a `take` left a transaction (and row locks) open.
    taking: bool,
}

impl PgQueue {
    pub(super) fn new(client: Client) -> Self {
        Self {
            client,
            taking: false,
        }
    }
}

fn notification(row: &Row) -> Notification {
    Notification {
        event_id: row.get(0),
        channel: row.get(1),
        account: row.get(2),
        body: row.get(3),
    }
}

impl Queue for PgQueue {
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing>, StorageError> {
        let now = unix_millis(SystemTime::now());
        self.client.batch_execute("BEGIN")?;
        self.taking = true;
        let rows = self.client.query(
            "SELECT event_id, channel, account, body, failures FROM notifications
             WHERE sent_at IS NULL AND parked_at IS NULL AND retry_at <= $1
             ORDER BY queued_at, event_id, channel LIMIT $2
             FOR UPDATE SKIP LOCKED",
            &[&now, &(limit as i64)],
        )?;
        if rows.is_empty() {
            self.client.batch_execute("COMMIT")?;
            self.taking = false;
        }
        Ok(rows
            .iter()
            .map(|row| {
                let notification = notification(row);
                Outgoing {
                    key: idempotency_key(&notification),
                    notification,
                    failures: row.get::<_, i32>(4).unsigned_abs(),
                }
            })
            .collect())
    }

    fn settle(
        &mut self,
        sent: &[(Outgoing, Sent)],
        policy: RelayPolicy,
    ) -> Result<(), StorageError> {
        let now = unix_millis(SystemTime::now());
        if !self.taking {
            self.client.batch_execute("BEGIN")?;
        }
        // Every confirmed send is marked in one statement: one per row made
        // the relay five times slower (BENCHMARKS.md, "The relay").
        let (event_ids, channels): (Vec<&str>, Vec<&str>) = sent
            .iter()
            .filter(|(_, result)| matches!(result, Sent::Confirmed | Sent::AlreadyThere))
            .map(|(outgoing, _)| {
                let row = &outgoing.notification;
                (row.event_id.as_str(), row.channel.as_str())
            })
            .unzip();
        if !event_ids.is_empty() {
            self.client.execute(
                "UPDATE notifications SET sent_at = $1
                 FROM unnest($2::text[], $3::text[]) AS confirmed (event_id, channel)
                 WHERE notifications.event_id = confirmed.event_id
                   AND notifications.channel = confirmed.channel",
                &[&now, &event_ids, &channels],
            )?;
        }
        for (outgoing, result) in sent {
            let Sent::Failed(error) = result else {
                continue;
            };
            let row = &outgoing.notification;
            let failures = outgoing.failures + 1;
            let parked_at = policy.parks(failures).then_some(now);
            self.client.execute(
                "UPDATE notifications SET failures = $1, last_error = $2, retry_at = $3,
                        parked_at = $4
                 WHERE event_id = $5 AND channel = $6",
                &[
                    &i32::try_from(failures).unwrap_or(i32::MAX),
                    error,
                    &policy.retry_at(now, failures),
                    &parked_at,
                    &row.event_id,
                    &row.channel,
                ],
            )?;
        }
        self.client.batch_execute("COMMIT")?;
        self.taking = false;
        Ok(())
    }

    fn remaining(&mut self) -> Result<u64, StorageError> {
        let count: i64 = self
            .client
            .query_one(
                "SELECT count(*) FROM notifications WHERE sent_at IS NULL AND parked_at IS NULL",
                &[],
            )?
            .get(0);
        Ok(count.unsigned_abs())
    }

    fn parked(&mut self) -> Result<Vec<Parked>, StorageError> {
        let rows = self.client.query(
            "SELECT event_id, channel, account, body, failures, last_error, parked_at
             FROM notifications WHERE parked_at IS NOT NULL
             ORDER BY parked_at, event_id, channel",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| Parked {
                key: idempotency_key(&notification(row)),
                failures: row.get::<_, i32>(4).unsigned_abs(),
                last_error: row.get::<_, Option<String>>(5).unwrap_or_default(),
                parked_at: row.get(6),
            })
            .collect())
    }

    fn requeue(&mut self, keys: &[String]) -> Result<u64, StorageError> {
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        Ok(self.client.execute(
            "UPDATE notifications SET parked_at = NULL, failures = 0, retry_at = 0
             WHERE parked_at IS NOT NULL
               AND (cardinality($1::text[]) = 0 OR channel || ':' || event_id = ANY ($1))",
            &[&keys],
        )?)
    }
}
