//! The relay's queue over a PostgreSQL project's outbox.
//!
//! The outbox table is `notifications`, keyed `(event_id, channel)`, with
//! the relay's bookkeeping columns (`queued_at`, `sent_at`, `failures`,
//! `last_error`, `retry_at`, `parked_at`, `trace_parent`): the runtime's
//! part. The project's part is the payload columns and how a row becomes
//! its notice ([`OutboxRow`]).
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

use std::marker::PhantomData;
use std::time::SystemTime;

use postgres::{Row, Statement};

use super::{Exec, Pipelined};
use crate::inbox::unix_millis;
use crate::relay::{Notice, Outgoing, Parked, Queue, RelayPolicy, Sent};
use crate::storage::StorageError;

/// A notice as a row of the outbox: the project's side of [`OutboxQueue`].
pub trait OutboxRow: Notice + Sized + 'static {
    /// The row's key in the outbox: `(event_id, channel)`.
    fn outbox_key(&self) -> (&str, &str);

    /// The notice a row holds, read by column name (`event_id`, `channel`,
    /// `trace_parent` and the project's payload columns: every column of
    /// the table is selected).
    fn from_row(row: &Row) -> Self;
}

/// Up to `$2` rows due at `$1`, oldest first, locked for this relay.
pub const DUE: &str = "SELECT * FROM notifications
                   WHERE sent_at IS NULL AND parked_at IS NULL AND retry_at <= $1
                   ORDER BY queued_at, event_id, channel LIMIT $2
                   FOR UPDATE SKIP LOCKED";

/// Marks the rows with the keys in `$2` and `$3` sent at `$1`.
const MARK_SENT: &str = "UPDATE notifications SET sent_at = $1
                         FROM unnest($2::text[], $3::text[]) AS confirmed (event_id, channel)
                         WHERE notifications.event_id = confirmed.event_id
                           AND notifications.channel = confirmed.channel";

/// The outbox of notices `N` as one relay sees it.
pub struct OutboxQueue<N> {
    client: Pipelined,
    /// [`DUE`] and [`MARK_SENT`], prepared once: a statement sent as text
    /// costs a round trip more each time.
    due: Statement,
    mark_sent: Statement,
    notices: PhantomData<fn() -> N>,
}

impl<N: OutboxRow> OutboxQueue<N> {
    /// The queue over `client`, its statements prepared.
    pub fn new(mut client: Pipelined) -> Result<Self, StorageError> {
        Ok(Self {
            due: client.prepare(DUE)?,
            mark_sent: client.prepare(MARK_SENT)?,
            client,
            notices: PhantomData,
        })
    }

    /// The connection, for tests that count its round trips.
    pub fn client(&mut self) -> &mut Pipelined {
        &mut self.client
    }
}

impl<N: OutboxRow> Queue<N> for OutboxQueue<N> {
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing<N>>, StorageError> {
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
                let notification = N::from_row(row);
                Outgoing {
                    key: notification.idempotency_key(),
                    notification,
                    failures: row.get::<_, i32>("failures").unsigned_abs(),
                }
            })
            .collect())
    }

    fn settle(
        &mut self,
        sent: &[(Outgoing<N>, Sent)],
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
            .map(|(outgoing, _)| outgoing.notification.outbox_key())
            .unzip();
        if !event_ids.is_empty() {
            self.client
                .execute(&self.mark_sent, &[&now, &event_ids, &channels])?;
        }
        for (outgoing, result) in sent {
            let Sent::Failed(error) = result else {
                continue;
            };
            let (event_id, channel) = outgoing.notification.outbox_key();
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
                    &event_id,
                    &channel,
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
        Ok(self
            .parked_rows()?
            .into_iter()
            .map(|(_, parked)| parked)
            .collect())
    }

    fn requeue(&mut self, keys: &[String]) -> Result<u64, StorageError> {
        let (event_ids, channels): (Vec<String>, Vec<String>) = self
            .parked_rows()?
            .into_iter()
            .filter(|(_, parked)| keys.is_empty() || keys.contains(&parked.key))
            .map(|(notice, _)| {
                let (event_id, channel) = notice.outbox_key();
                (event_id.to_owned(), channel.to_owned())
            })
            .unzip();
        Ok(self.client.execute(
            "UPDATE notifications SET parked_at = NULL, failures = 0, retry_at = 0
             FROM unnest($1::text[], $2::text[]) AS chosen (event_id, channel)
             WHERE notifications.event_id = chosen.event_id
               AND notifications.channel = chosen.channel
               AND parked_at IS NOT NULL",
            &[&event_ids, &channels],
        )?)
    }
}

impl<N: OutboxRow> OutboxQueue<N> {
    /// Every parked row, oldest first, with its notice.
    fn parked_rows(&mut self) -> Result<Vec<(N, Parked)>, StorageError> {
        let rows = self.client.query(
            "SELECT * FROM notifications WHERE parked_at IS NOT NULL
             ORDER BY parked_at, event_id, channel",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| {
                let notice = N::from_row(row);
                let parked = Parked {
                    key: notice.idempotency_key(),
                    failures: row.get::<_, i32>("failures").unsigned_abs(),
                    last_error: row
                        .get::<_, Option<String>>("last_error")
                        .unwrap_or_default(),
                    parked_at: row.get("parked_at"),
                };
                (notice, parked)
            })
            .collect())
    }
}
