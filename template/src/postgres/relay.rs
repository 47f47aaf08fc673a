//! The relay's queue on PostgreSQL.
//!
//! Any number of relays may share the outbox: each takes its rows with
//! `SELECT ... FOR UPDATE SKIP LOCKED` in a transaction that stays open
//! while it sends them, so another relay skips those rows instead of
//! sending them at the same time, and takes them over if this one dies
//! before marking them (the server ends the dead connection's transaction
//! and its locks with it).
//!
//! The connection is pipelined ([`Pipelined`]): `BEGIN` travels with the
//! take (a take that finds nothing ends without waiting for its answer),
//! and the transaction that marks rows sent commits without waiting for
//! its WAL to reach the disk (`synchronous_commit = off`). Losing that
//! commit to a server crash loses only the marks, and a row not marked sent
//! is sent again, which the relay already allows for (a relay can die
//! between sending and marking, too): receivers deduplicate on the
//! idempotency key. What is never lost is a notification, because the
//! consumer's transaction that queued it commits synchronously.

use std::time::SystemTime;

use postgres::{Row, Statement};

use crate::handlers::Notification;
use crate::inbox::{StorageError, unix_millis};
use crate::relay::{Notice, Outgoing, Parked, Queue, RelayPolicy, Sent};

use super::{Exec, Pipelined};

/// Up to `$2` rows due at `$1`, oldest first, locked for this relay.
const DUE: &str =
    "SELECT event_id, channel, account, body, failures, trace_parent FROM notifications
                   WHERE sent_at IS NULL AND parked_at IS NULL AND retry_at <= $1
                   ORDER BY queued_at, event_id, channel LIMIT $2
                   FOR UPDATE SKIP LOCKED";

/// Marks the rows with the keys in `$2` and `$3` sent at `$1`.
const MARK_SENT: &str = "UPDATE notifications SET sent_at = $1
                         FROM unnest($2::text[], $3::text[]) AS confirmed (event_id, channel)
                         WHERE notifications.event_id = confirmed.event_id
                           AND notifications.channel = confirmed.channel";

/// The outbox as one relay sees it.
pub struct PgQueue {
    client: Pipelined,
    /// [`DUE`] and [`MARK_SENT`], prepared once: a statement sent as text
    /// costs a round trip more each time.
    due: Statement,
    mark_sent: Statement,
}

impl PgQueue {
    pub(super) fn new(mut client: Pipelined) -> Result<Self, StorageError> {
        Ok(Self {
            due: client.prepare(DUE)?,
            mark_sent: client.prepare(MARK_SENT)?,
            client,
        })
    }

    /// The connection, for tests that count its round trips.
    pub fn client(&mut self) -> &mut Pipelined {
        &mut self.client
    }
}

fn notification(row: &Row) -> Notification {
    Notification {
        event_id: row.get(0),
        channel: row.get(1),
        account: row.get(2),
        body: row.get(3),
        trace_parent: row.get("trace_parent"),
    }
}

impl Queue<Notification> for PgQueue {
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing>, StorageError> {
        let now = unix_millis(SystemTime::now());
        self.client.begin();
        let rows = self.client.query(&self.due, &[&now, &(limit as i64)])?;
        if rows.is_empty() {
            // It locked nothing: ended without waiting for the answer.
            self.client.commit_unawaited();
        }
        Ok(rows
            .iter()
            .map(|row| {
                let notification = notification(row);
                Outgoing {
                    key: notification.idempotency_key(),
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
        // A take that found rows left its transaction (and row locks) open.
        if !self.client.in_transaction() {
            self.client.begin();
        }
        self.client.defer("SET LOCAL synchronous_commit = off");
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
            self.client
                .execute(&self.mark_sent, &[&now, &event_ids, &channels])?;
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
        self.client.commit()?;
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
            "SELECT event_id, channel, account, body, failures, last_error, parked_at, trace_parent
             FROM notifications WHERE parked_at IS NOT NULL
             ORDER BY parked_at, event_id, channel",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| Parked {
                key: notification(row).idempotency_key(),
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
