//! The relay's queue on SQLite.
//!
//! SQLite has no row locks to let two relays share the outbox, so there is
//! one relay per database: the queue holds an exclusive lock on a file
//! next to the database for as long as it lives (released by the operating
//! system however the relay ends), and a second relay is refused.

use std::fs::File;
use std::path::Path;
use std::time::SystemTime;

use rusqlite::{Connection, params};

use crate::handlers::Notification;
use crate::inbox::{StorageError, StorageFault, unix_millis};
use crate::relay::{Notice, Outgoing, Parked, Queue, RelayPolicy, Sent};

/// Up to `?2` rows due at `?1`, oldest first.
const DUE: &str =
    "SELECT event_id, channel, account, body, failures, trace_parent FROM notifications
                   WHERE sent_at IS NULL AND parked_at IS NULL AND retry_at <= ?1
                   ORDER BY queued_at, event_id, channel LIMIT ?2";

/// The outbox as the one relay of this database sees it.
pub struct SqliteQueue {
    db: Connection,
    _only_relay: File,
}

impl SqliteQueue {
    pub(super) fn open(db: Connection, database: &Path) -> Result<Self, StorageError> {
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
        })
    }
}

impl Queue<Notification> for SqliteQueue {
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing>, StorageError> {
        let now = unix_millis(SystemTime::now());
        let mut statement = self.db.prepare_cached(DUE)?;
        let rows = statement.query_map(params![now, limit as i64], |row| {
            let notification = Notification {
                event_id: row.get(0)?,
                channel: row.get(1)?,
                account: row.get(2)?,
                body: row.get(3)?,
                trace_parent: row.get(5)?,
            };
            Ok(Outgoing {
                key: notification.idempotency_key(),
                notification,
                failures: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn settle(
        &mut self,
        sent: &[(Outgoing, Sent)],
        policy: RelayPolicy,
    ) -> Result<(), StorageError> {
        let now = unix_millis(SystemTime::now());
        let tx = self
            .db
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for (outgoing, result) in sent {
            let row = &outgoing.notification;
            match result {
                Sent::Confirmed | Sent::AlreadyThere => tx
                    .prepare_cached(
                        "UPDATE notifications SET sent_at = ?1 WHERE event_id = ?2 AND channel = ?3",
                    )?
                    .execute(params![now, row.event_id, row.channel])?,
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
                        row.event_id,
                        row.channel
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
        let mut statement = self.db.prepare(
            "SELECT event_id, channel, account, body, failures, last_error, parked_at, trace_parent
             FROM notifications WHERE parked_at IS NOT NULL
             ORDER BY parked_at, event_id, channel",
        )?;
        let rows = statement.query_map([], |row| {
            let notification = Notification {
                event_id: row.get(0)?,
                channel: row.get(1)?,
                account: row.get(2)?,
                body: row.get(3)?,
                trace_parent: row.get(7)?,
            };
            Ok(Parked {
                key: notification.idempotency_key(),
                failures: row.get(4)?,
                last_error: row.get::<_, Option<String>>(5)?.unwrap_or_default(),
                parked_at: row.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn requeue(&mut self, keys: &[String]) -> Result<u64, StorageError> {
        let parked = self.parked()?;
        let tx = self.db.unchecked_transaction()?;
        let mut requeued = 0;
        for letter in parked
            .iter()
            .filter(|p| keys.is_empty() || keys.contains(&p.key))
        {
            let (channel, event_id) = letter.key.split_once(':').unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A take reads its rows from the index, in order, and stops at the
    /// limit: sorting the rows left to send at every take would make a
    /// relay working off a backlog slower with every row still in it.
    #[test]
    fn a_take_reads_the_due_rows_in_index_order() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            <crate::handlers::Handlers as inbox_kit_runtime::sqlite::SqliteProject>::TABLES,
        )
        .unwrap();
        let mut explain = db.prepare(&format!("EXPLAIN QUERY PLAN {DUE}")).unwrap();
        let plan: Vec<String> = explain
            .query_map(params![0, 100], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("USING INDEX"))
                && !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }
}
