//! The relay's queue over a SQLite project's outbox.
//!
//! The outbox table is `notifications`, keyed `(event_id, channel)`, with
//! the relay's bookkeeping columns (`queued_at`, `sent_at`, `failures`,
//! `last_error`, `retry_at`, `parked_at`, `trace_parent`): the runtime's
//! part. The project's part is the payload columns and how a row becomes
//! its notice ([`OutboxRow`]).
//!
//! SQLite has no row locks to let two relays share the outbox, so there is
//! one relay per database: the queue holds an exclusive lock on a file
//! next to the database for as long as it lives (released by the operating
//! system however the relay ends), and a second relay is refused.

use std::fs::File;
use std::marker::PhantomData;
use std::path::Path;
use std::time::SystemTime;

use rusqlite::{Connection, Row, params};

use crate::inbox::unix_millis;
use crate::relay::{Notice, Outgoing, Parked, Queue, RelayPolicy, Sent};
use crate::storage::{StorageError, StorageFault};

/// A notice as a row of the outbox: the project's side of [`OutboxQueue`].
pub trait OutboxRow: Notice + Sized + 'static {
    /// The row's key in the outbox: `(event_id, channel)`.
    fn outbox_key(&self) -> (&str, &str);

    /// The notice a row holds, read by column name (`event_id`, `channel`,
    /// `trace_parent` and the project's payload columns: every column of
    /// the table is selected).
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self>;
}

/// Up to `?2` rows due at `?1`, oldest first, read from the index.
pub const DUE: &str = "SELECT * FROM notifications
                   WHERE sent_at IS NULL AND parked_at IS NULL AND retry_at <= ?1
                   ORDER BY queued_at, event_id, channel LIMIT ?2";

/// The outbox of notices `N` as the one relay of its database sees it.
pub struct OutboxQueue<N> {
    db: Connection,
    _only_relay: File,
    notices: PhantomData<fn() -> N>,
}

impl<N: OutboxRow> OutboxQueue<N> {
    /// The queue over `db`, the connection to the database at `database`;
    /// refused while another relay holds the database's relay lock.
    pub fn open(db: Connection, database: &Path) -> Result<Self, StorageError> {
        let lock = database.with_extension("relay-lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock)
            .map_err(|error| {
                StorageError::new(
                    StorageFault::Unavailable,
                    format!("{}: {error}", lock.display()),
                )
            })?;
        file.try_lock().map_err(|_| {
            StorageError::new(
                StorageFault::Unavailable,
                "another relay is already sending this database's outbox (SQLite has one relay per database)",
            )
        })?;
        Ok(Self {
            db,
            _only_relay: file,
            notices: PhantomData,
        })
    }
}

impl<N: OutboxRow> Queue<N> for OutboxQueue<N> {
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing<N>>, StorageError> {
        let now = unix_millis(SystemTime::now());
        let mut statement = self.db.prepare_cached(DUE)?;
        let rows = statement.query_map(params![now, limit as i64], |row| {
            let notification = N::from_row(row)?;
            Ok(Outgoing {
                key: notification.idempotency_key(),
                notification,
                failures: row.get("failures")?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn settle(
        &mut self,
        sent: &[(Outgoing<N>, Sent)],
        policy: RelayPolicy,
    ) -> Result<(), StorageError> {
        let now = unix_millis(SystemTime::now());
        let tx = self
            .db
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for (outgoing, result) in sent {
            let (event_id, channel) = outgoing.notification.outbox_key();
            match result {
                Sent::Confirmed | Sent::AlreadyThere => tx
                    .prepare_cached(
                        "UPDATE notifications SET sent_at = ?1 WHERE event_id = ?2 AND channel = ?3",
                    )?
                    .execute(params![now, event_id, channel])?,
                Sent::Failed(error) => {
                    let failures = outgoing.failures + 1;
                    let parked_at = policy.parks(failures).then_some(now);
                    tx.prepare_cached(
                        "UPDATE notifications SET failures = ?1, last_error = ?2, retry_at = ?3,
                                parked_at = ?4
                         WHERE event_id = ?5 AND channel = ?6",
                    )?
                    .execute(params![
                        failures,
                        error,
                        policy.retry_at(now, failures),
                        parked_at,
                        event_id,
                        channel
                    ])?
                }
                // Never given: the relay stops before settling it.
                Sent::Closed(_) => 0,
            };
        }
        Ok(tx.commit()?)
    }

    fn remaining(&mut self) -> Result<u64, StorageError> {
        let count: i64 = self.db.query_row(
            "SELECT count(*) FROM notifications WHERE sent_at IS NULL AND parked_at IS NULL",
            [],
            |row| row.get(0),
        )?;
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
        let parked = self.parked_rows()?;
        let tx = self.db.unchecked_transaction()?;
        let mut requeued = 0;
        for (notice, _) in parked
            .iter()
            .filter(|(_, p)| keys.is_empty() || keys.contains(&p.key))
        {
            let (event_id, channel) = notice.outbox_key();
            requeued += tx
                .prepare_cached(
                    "UPDATE notifications SET parked_at = NULL, failures = 0, retry_at = 0
                     WHERE event_id = ?1 AND channel = ?2 AND parked_at IS NOT NULL",
                )?
                .execute(params![event_id, channel])? as u64;
        }
        tx.commit()?;
        Ok(requeued)
    }
}

impl<N: OutboxRow> OutboxQueue<N> {
    /// Every parked row, oldest first, with its notice.
    fn parked_rows(&mut self) -> Result<Vec<(N, Parked)>, StorageError> {
        let mut statement = self.db.prepare(
            "SELECT * FROM notifications WHERE parked_at IS NOT NULL
             ORDER BY parked_at, event_id, channel",
        )?;
        let rows = statement.query_map([], |row| {
            let notice = N::from_row(row)?;
            let parked = Parked {
                key: notice.idempotency_key(),
                failures: row.get("failures")?,
                last_error: row
                    .get::<_, Option<String>>("last_error")?
                    .unwrap_or_default(),
                parked_at: row.get("parked_at")?,
            };
            Ok((notice, parked))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
