//! The handlers' tables on PostgreSQL: the tables themselves ([`TABLES`])
//! and the SQL behind [`Ledger`], [`Outbox`] and [`Refunds`], side by side.
//!
//! Every statement is a round trip to the server, so the ones a delivery
//! runs are prepared once per connection ([`TableStatements`]) and the
//! debit is a single statement.

use postgres::Statement;

use super::Exec;

use crate::handlers::{Debited, Ledger, Notification, Outbox, Refundable, Refunded, Refunds};
use crate::inbox::StorageError;

/// Every table of this project's handlers, created if missing when the
/// database is migrated, after the inbox's own
/// (`inbox_kit_runtime::postgres::SCHEMA`: inbox, attempts, dead_letters). One section per consumer, each with the key that stops
/// its repeats; a new consumer adds its section here, beside the SQL that
/// uses it below. Timestamps are milliseconds since the Unix epoch (UTC).
/// Ids compare byte for byte (`COLLATE "C"`), as message ids do in the
/// inbox: two are the same only if every byte is, whatever the locale.
pub const TABLES: &str = r#"
-- `debit`: balances, and every applied debit under its payment id. The
-- payment id is the ledger's own key (one payment, one debit): a second
-- line of defence behind the inbox.
CREATE TABLE IF NOT EXISTS accounts (
    id      bigint PRIMARY KEY,
    balance bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS debits (
    payment_id text   COLLATE "C" PRIMARY KEY,
    account    bigint NOT NULL,
    amount     bigint NOT NULL
);

-- `refund`: every refund credited, under its own refund id (from the
-- payload): the same refund sent again under a new message id passes the
-- inbox, and this key stops it. Looked up by payment to add up what was
-- refunded of it.
CREATE TABLE IF NOT EXISTS refunds (
    refund_id  text   COLLATE "C" PRIMARY KEY,
    payment_id text   COLLATE "C" NOT NULL,
    account    bigint NOT NULL,
    amount     bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS refunds_by_payment ON refunds (payment_id);

-- `notify`: the notifications outbox, one row per event and channel. The
-- key must include the channel (one event, one email AND one push) and
-- nothing more (a repeat of the event is the same notification).
CREATE TABLE IF NOT EXISTS notifications (
    event_id   text    COLLATE "C" NOT NULL,
    channel    text    NOT NULL,
    account    bigint  NOT NULL,
    body       text    NOT NULL,
    -- The relay's bookkeeping (the runtime's relay): when the row was queued, when
    -- its send was confirmed, failed sends and the earliest next try, and
    -- when it was parked after too many failures.
    queued_at  bigint  NOT NULL DEFAULT ((extract(epoch FROM clock_timestamp()) * 1000)::bigint),
    sent_at    bigint,
    failures   integer NOT NULL DEFAULT 0,
    retry_at   bigint  NOT NULL DEFAULT 0,
    last_error text,
    parked_at  bigint,
    -- The W3C trace context of the delivery that queued the row, which the
    -- relay sends on.
    trace_parent text,
    UNIQUE (event_id, channel)
);
-- Added after the table first shipped: a database made before gets it.
-- Looked up first: even with IF NOT EXISTS, ALTER TABLE waits for an
-- exclusive lock, behind every running consumer's transaction.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM information_schema.columns
                   WHERE table_schema = current_schema()
                     AND table_name = 'notifications' AND column_name = 'trace_parent') THEN
        ALTER TABLE notifications ADD COLUMN trace_parent text;
    END IF;
END $$;
-- What the relay has left to send, in the order it sends it: the whole
-- sort key, so a take reads its batch off the index and stops (ordered by
-- `queued_at` alone, every take sorted every row left to send). Replaces
-- `notifications_to_send`, which had only `queued_at`.
DROP INDEX IF EXISTS notifications_to_send;
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (queued_at, event_id, channel)
WHERE sent_at IS NULL AND parked_at IS NULL;
"#;

/// The statements deliveries run, prepared on one connection.
pub struct TableStatements {
    debit: Statement,
    debit_all: Statement,
    queue_notification: Statement,
    queue_all: Statement,
    lock_payment: Statement,
    refunded: Statement,
    record_refund: Statement,
}

impl TableStatements {
    pub fn prepare(client: &mut impl Exec) -> Result<Self, StorageError> {
        Ok(Self {
            // Lowers the balance and records the debit in one round trip;
            // no row back when the account does not exist.
            debit: client.prepare(
                "WITH debited AS (
                     UPDATE accounts SET balance = balance - $3 WHERE id = $2 RETURNING id
                 )
                 INSERT INTO debits (payment_id, account, amount)
                 SELECT $1, id, $3 FROM debited
                 RETURNING 1",
            )?,
            // A batch's debits: each account lowered once by the sum of its
            // debits, a ledger row for each debit whose account exists.
            debit_all: client.prepare(
                "WITH batch AS (
                     SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])
                         AS batch (payment_id, account, amount)
                 ), debited AS (
                     UPDATE accounts SET balance = balance - total.amount
                     FROM (SELECT account, sum(amount)::bigint AS amount
                           FROM batch GROUP BY account) AS total
                     WHERE accounts.id = total.account
                     RETURNING accounts.id
                 )
                 INSERT INTO debits (payment_id, account, amount)
                 SELECT batch.payment_id, batch.account, batch.amount
                 FROM batch JOIN debited ON debited.id = batch.account",
            )?,
            queue_notification: client.prepare(
                "INSERT INTO notifications (event_id, channel, account, body, trace_parent)
                 VALUES ($1, $2, $3, $4, $5)",
            )?,
            queue_all: client.prepare(
                "INSERT INTO notifications (event_id, channel, account, body, trace_parent)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])",
            )?,
            lock_payment: client
                .prepare("SELECT account, amount FROM debits WHERE payment_id = $1 FOR UPDATE")?,
            refunded: client.prepare(
                "SELECT coalesce(sum(amount), 0)::bigint FROM refunds WHERE payment_id = $1",
            )?,
            // Inserts the refund and credits its account in one round trip;
            // no row back when a refund with this id is there already.
            record_refund: client.prepare(
                "WITH recorded AS (
                     INSERT INTO refunds (refund_id, payment_id, account, amount)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING
                     RETURNING account, amount
                 )
                 UPDATE accounts SET balance = balance + recorded.amount
                 FROM recorded WHERE accounts.id = recorded.account
                 RETURNING 1",
            )?,
        })
    }
}

/// The handlers' tables, seen through one connection or transaction.
pub struct PgTables<'a, C: Exec> {
    client: &'a mut C,
    statements: &'a TableStatements,
}

impl<'a, C: Exec> PgTables<'a, C> {
    pub fn new(client: &'a mut C, statements: &'a TableStatements) -> Self {
        Self { client, statements }
    }
}

impl<C: Exec> Ledger for PgTables<'_, C> {
    fn debit(&mut self, debit: &Debited) -> Result<bool, StorageError> {
        let recorded = self.client.query_opt(
            &self.statements.debit,
            &[&debit.payment_id, &debit.account, &debit.amount],
        )?;
        Ok(recorded.is_some())
    }

    fn debit_all(&mut self, debits: &[Debited]) -> Result<usize, StorageError> {
        let payments: Vec<&str> = debits.iter().map(|d| d.payment_id.as_str()).collect();
        let accounts: Vec<i64> = debits.iter().map(|d| d.account).collect();
        let amounts: Vec<i64> = debits.iter().map(|d| d.amount).collect();
        let recorded = self.client.execute(
            &self.statements.debit_all,
            &[&payments, &accounts, &amounts],
        )?;
        Ok(usize::try_from(recorded).unwrap_or(usize::MAX))
    }

    fn open_account(&mut self, account: i64, balance: i64) -> Result<(), StorageError> {
        self.client.execute(
            "INSERT INTO accounts (id, balance) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE SET balance = excluded.balance",
            &[&account, &balance],
        )?;
        Ok(())
    }

    fn balances(&mut self) -> Result<Vec<(i64, i64)>, StorageError> {
        let rows = self
            .client
            .query("SELECT id, balance FROM accounts ORDER BY id", &[])?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    fn debits(&mut self) -> Result<Vec<Debited>, StorageError> {
        let rows = self.client.query(
            "SELECT payment_id, account, amount FROM debits ORDER BY payment_id",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| Debited {
                payment_id: row.get(0),
                account: row.get(1),
                amount: row.get(2),
            })
            .collect())
    }
}

impl<C: Exec> Outbox for PgTables<'_, C> {
    fn queue_notification(&mut self, notification: &Notification) -> Result<(), StorageError> {
        self.client.execute(
            &self.statements.queue_notification,
            &[
                &notification.event_id,
                &notification.channel,
                &notification.account,
                &notification.body,
                &notification.trace_parent,
            ],
        )?;
        Ok(())
    }

    fn queue_all(&mut self, notifications: &[Notification]) -> Result<(), StorageError> {
        let column = |get: fn(&Notification) -> &str| -> Vec<&str> {
            notifications.iter().map(get).collect()
        };
        let accounts: Vec<i64> = notifications.iter().map(|n| n.account).collect();
        let traces: Vec<Option<&str>> = notifications
            .iter()
            .map(|n| n.trace_parent.as_deref())
            .collect();
        self.client.execute(
            &self.statements.queue_all,
            &[
                &column(|n| &n.event_id),
                &column(|n| &n.channel),
                &accounts,
                &column(|n| &n.body),
                &traces,
            ],
        )?;
        Ok(())
    }

    fn notifications(&mut self) -> Result<Vec<Notification>, StorageError> {
        let rows = self.client.query(
            "SELECT event_id, channel, account, body, trace_parent FROM notifications
             ORDER BY event_id, channel",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| Notification {
                event_id: row.get(0),
                channel: row.get(1),
                account: row.get(2),
                body: row.get(3),
                trace_parent: row.get(4),
            })
            .collect())
    }
}

impl<C: Exec> Refunds for PgTables<'_, C> {
    /// Locks the debit's row, then adds up its refunds in a statement of
    /// its own. At READ COMMITTED each statement sees what was committed
    /// when it started: a sum taken in the statement that waits for the
    /// lock (a CTE, a subquery) would miss the refund committed by the
    /// transaction it waited for, and let two refunds through where there
    /// was room for one.
    fn refundable(&mut self, payment_id: &str) -> Result<Option<Refundable>, StorageError> {
        let Some(payment) = self
            .client
            .query_opt(&self.statements.lock_payment, &[&payment_id])?
        else {
            return Ok(None);
        };
        let refunded: i64 = self
            .client
            .query_one(&self.statements.refunded, &[&payment_id])?
            .get(0);
        Ok(Some(Refundable {
            account: payment.get(0),
            debited: payment.get(1),
            refunded,
        }))
    }

    fn record_refund(&mut self, refund: &Refunded) -> Result<bool, StorageError> {
        let recorded = self.client.query_opt(
            &self.statements.record_refund,
            &[
                &refund.refund_id,
                &refund.payment_id,
                &refund.account,
                &refund.amount,
            ],
        )?;
        Ok(recorded.is_some())
    }

    fn refunds(&mut self) -> Result<Vec<Refunded>, StorageError> {
        let rows = self.client.query(
            "SELECT refund_id, payment_id, account, amount FROM refunds ORDER BY refund_id",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|row| Refunded {
                refund_id: row.get(0),
                payment_id: row.get(1),
                account: row.get(2),
                amount: row.get(3),
            })
            .collect())
    }
}
