//! The handlers' tables on SQLite: the tables themselves ([`TABLES`]) and
//! the SQL behind [`Ledger`], [`Outbox`] and [`Refunds`], side by side.
//!
//! Statements go through the connection's statement cache, so a batch of
//! deliveries prepares each one once.

use rusqlite::{Connection, OptionalExtension, params};

use crate::handlers::{Debited, Ledger, Notification, Outbox, Refundable, Refunded, Refunds};
use crate::inbox::StorageError;

/// Every table of this project's handlers, created if missing when the
/// database opens, after the inbox's own
/// (`inbox_kit_runtime::sqlite::SCHEMA`: inbox, attempts, dead_letters). One section per consumer, each with the key that stops
/// its repeats; a new consumer adds its section here, beside the SQL that
/// uses it below. Timestamps are milliseconds since the Unix epoch (UTC).
pub const TABLES: &str = r#"
-- `debit`: balances, and every applied debit under its payment id. The
-- payment id is the ledger's own key (one payment, one debit): a second
-- line of defence behind the inbox.
CREATE TABLE IF NOT EXISTS accounts (
    id      INTEGER PRIMARY KEY,
    balance INTEGER NOT NULL CHECK (typeof(balance) = 'integer')
);
CREATE TABLE IF NOT EXISTS debits (
    payment_id TEXT    PRIMARY KEY,
    account    INTEGER NOT NULL,
    amount     INTEGER NOT NULL
) WITHOUT ROWID;

-- `refund`: every refund credited, under its own refund id (from the
-- payload): the same refund sent again under a new message id passes the
-- inbox, and this key stops it. Looked up by payment to add up what was
-- refunded of it.
CREATE TABLE IF NOT EXISTS refunds (
    refund_id  TEXT    NOT NULL PRIMARY KEY,
    payment_id TEXT    NOT NULL,
    account    INTEGER NOT NULL,
    amount     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refunds_by_payment ON refunds (payment_id);

-- `notify`: the notifications outbox, one row per event and channel. The
-- key must include the channel (one event, one email AND one push) and
-- nothing more (a repeat of the event is the same notification).
CREATE TABLE IF NOT EXISTS notifications (
    event_id   TEXT    NOT NULL,
    channel    TEXT    NOT NULL,
    account    INTEGER NOT NULL,
    body       TEXT    NOT NULL,
    -- The relay's bookkeeping (the runtime's relay): when the row was queued, when
    -- its send was confirmed, failed sends and the earliest next try, and
    -- when it was parked after too many failures.
    queued_at  INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000 AS INTEGER)),
    sent_at    INTEGER,
    failures   INTEGER NOT NULL DEFAULT 0,
    retry_at   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    parked_at  INTEGER,
    -- The W3C trace context of the delivery that queued the row, which the
    -- relay sends on. Added after the table first shipped:
    -- a database made before gets it (ADDED_COLUMNS in mod.rs).
    trace_parent TEXT,
    UNIQUE (event_id, channel)
);
-- What the relay has left to send, in the order it sends it: the whole
-- sort key, so a take reads its batch off the index and stops (ordered by
-- `queued_at` alone, every take sorted every row left to send). Replaces
-- `notifications_to_send`, which had only `queued_at`.
DROP INDEX IF EXISTS notifications_to_send;
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (queued_at, event_id, channel)
WHERE sent_at IS NULL AND parked_at IS NULL;
"#;

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
