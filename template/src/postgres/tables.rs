//! The handlers' tables on PostgreSQL: the SQL behind [`Ledger`] and
//! [`Outbox`].
//!
//! Every statement is a round trip to the server, so the ones a delivery
//! runs are prepared once per connection ([`TableStatements`]) and the
//! debit is a single statement.

use postgres::{GenericClient, Statement};

use crate::handlers::{Debited, Ledger, Notification, Outbox};
use crate::inbox::StorageError;

/// The statements deliveries run, prepared on one connection.
pub struct TableStatements {
    debit: Statement,
    queue_notification: Statement,
}

impl TableStatements {
    pub fn prepare(client: &mut impl GenericClient) -> Result<Self, StorageError> {
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
            queue_notification: client.prepare(
                "INSERT INTO notifications (event_id, channel, account, body)
                 VALUES ($1, $2, $3, $4)",
            )?,
        })
    }
}

/// The handlers' tables, seen through one connection or transaction.
pub struct PgTables<'a, C: GenericClient> {
    client: &'a mut C,
    statements: &'a TableStatements,
}

impl<'a, C: GenericClient> PgTables<'a, C> {
    pub fn new(client: &'a mut C, statements: &'a TableStatements) -> Self {
        Self { client, statements }
    }
}

impl<C: GenericClient> Ledger for PgTables<'_, C> {
    fn debit(&mut self, debit: &Debited) -> Result<bool, StorageError> {
        let recorded = self.client.query_opt(
            &self.statements.debit,
            &[&debit.payment_id, &debit.account, &debit.amount],
        )?;
        Ok(recorded.is_some())
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

impl<C: GenericClient> Outbox for PgTables<'_, C> {
    fn queue_notification(&mut self, notification: &Notification) -> Result<(), StorageError> {
        self.client.execute(
            &self.statements.queue_notification,
            &[
                &notification.event_id,
                &notification.channel,
                &notification.account,
                &notification.body,
            ],
        )?;
        Ok(())
    }

    fn notifications(&mut self) -> Result<Vec<Notification>, StorageError> {
        let rows = self.client.query(
            "SELECT event_id, channel, account, body FROM notifications
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
            })
            .collect())
    }
}
