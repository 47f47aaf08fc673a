//! The handlers' tables on SQLite: the SQL behind [`Ledger`], [`Outbox`]
//! and [`Refunds`].
//!
//! Statements go through the connection's statement cache, so a batch of
//! deliveries prepares each one once.

use rusqlite::{Connection, OptionalExtension, params};

use crate::handlers::{Debited, Ledger, Notification, Outbox, Refundable, Refunded, Refunds};
use crate::inbox::StorageError;

/// The handlers' tables, seen through one connection (usually inside the
/// delivery's transaction).
pub struct SqliteTables<'db> {
    db: &'db Connection,
}

impl<'db> SqliteTables<'db> {
    pub fn new(db: &'db Connection) -> Self {
        Self { db }
    }
}

impl Ledger for SqliteTables<'_> {
    fn debit(&mut self, debit: &Debited) -> Result<bool, StorageError> {
        let changed = self
            .db
            .prepare_cached("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2")?
            .execute(params![debit.amount, debit.account])?;
        if changed == 0 {
            return Ok(false);
        }
        self.db
            .prepare_cached("INSERT INTO debits (payment_id, account, amount) VALUES (?1, ?2, ?3)")?
            .execute(params![debit.payment_id, debit.account, debit.amount])?;
        Ok(true)
    }

    /// One debit after another: in-process SQLite has no round trips to
    /// save, and these statements are cached.
    fn debit_all(&mut self, debits: &[Debited]) -> Result<usize, StorageError> {
        let mut recorded = 0;
        for debit in debits {
            recorded += usize::from(self.debit(debit)?);
        }
        Ok(recorded)
    }

    fn open_account(&mut self, account: i64, balance: i64) -> Result<(), StorageError> {
        self.db.execute(
            "INSERT INTO accounts (id, balance) VALUES (?1, ?2)
             ON CONFLICT (id) DO UPDATE SET balance = excluded.balance",
            params![account, balance],
        )?;
        Ok(())
    }

    fn balances(&mut self) -> Result<Vec<(i64, i64)>, StorageError> {
        let mut statement = self
            .db
            .prepare("SELECT id, balance FROM accounts ORDER BY id")?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn debits(&mut self) -> Result<Vec<Debited>, StorageError> {
        let mut statement = self
            .db
            .prepare("SELECT payment_id, account, amount FROM debits ORDER BY payment_id")?;
        let rows = statement.query_map([], |row| {
            Ok(Debited {
                payment_id: row.get(0)?,
                account: row.get(1)?,
                amount: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl Outbox for SqliteTables<'_> {
    fn queue_notification(&mut self, notification: &Notification) -> Result<(), StorageError> {
        self.db
            .prepare_cached(
                "INSERT INTO notifications (event_id, channel, account, body, trace_parent)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                notification.event_id,
                notification.channel,
                notification.account,
                notification.body,
                notification.trace_parent
            ])?;
        Ok(())
    }

    /// One after another: no round trips to save in-process.
    fn queue_all(&mut self, notifications: &[Notification]) -> Result<(), StorageError> {
        notifications
            .iter()
            .try_for_each(|notification| self.queue_notification(notification))
    }

    fn notifications(&mut self) -> Result<Vec<Notification>, StorageError> {
        let mut statement = self.db.prepare(
            "SELECT event_id, channel, account, body, trace_parent FROM notifications
             ORDER BY event_id, channel",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(Notification {
                event_id: row.get(0)?,
                channel: row.get(1)?,
                account: row.get(2)?,
                body: row.get(3)?,
                trace_parent: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl Refunds for SqliteTables<'_> {
    /// No lock to take: every delivery's transaction is `BEGIN IMMEDIATE`,
    /// so no other transaction writes until this one ends.
    fn refundable(&mut self, payment_id: &str) -> Result<Option<Refundable>, StorageError> {
        Ok(self
            .db
            .prepare_cached(
                "SELECT account, amount,
                        (SELECT coalesce(sum(amount), 0) FROM refunds WHERE payment_id = ?1)
                 FROM debits WHERE payment_id = ?1",
            )?
            .query_row([payment_id], |row| {
                Ok(Refundable {
                    account: row.get(0)?,
                    debited: row.get(1)?,
                    refunded: row.get(2)?,
                })
            })
            .optional()?)
    }

    fn record_refund(&mut self, refund: &Refunded) -> Result<bool, StorageError> {
        let inserted = self
            .db
            .prepare_cached(
                "INSERT INTO refunds (refund_id, payment_id, account, amount)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                refund.refund_id,
                refund.payment_id,
                refund.account,
                refund.amount
            ])?;
        if inserted == 0 {
            return Ok(false);
        }
        self.db
            .prepare_cached("UPDATE accounts SET balance = balance + ?1 WHERE id = ?2")?
            .execute(params![refund.amount, refund.account])?;
        Ok(true)
    }

    fn refunds(&mut self) -> Result<Vec<Refunded>, StorageError> {
        let mut statement = self.db.prepare(
            "SELECT refund_id, payment_id, account, amount FROM refunds ORDER BY refund_id",
        )?;
        let rows = statement.query_map([], |row| {
            Ok(Refunded {
                refund_id: row.get(0)?,
                payment_id: row.get(1)?,
                account: row.get(2)?,
                amount: row.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
