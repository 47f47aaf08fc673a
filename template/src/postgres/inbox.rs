//! The inbox on PostgreSQL.
//!
//! Every batch is one transaction at READ COMMITTED. Each delivery runs
//! under its own SAVEPOINT and first claims its inbox row with
//! `INSERT ... ON CONFLICT DO NOTHING RETURNING 1`: a row back means the
//! delivery is new, no row means it is a duplicate, and neither aborts the
//! transaction (a caught unique violation would, without the savepoint). A
//! second worker claiming the same message waits for the first one's
//! transaction, then finds the row taken, or free if the first rolled back.
//! A failing handler rolls back to its savepoint, taking its claim with it,
//! and the failure is counted after that (see `poison.rs`).
//!
//! Serialization failures and deadlocks are not anyone's fault: the whole
//! batch is retried with backoff, and never reported as a duplicate or a
//! failed delivery. A connection the server dropped is reopened at the
//! next batch.

use std::time::{Duration, SystemTime};

use postgres::{Client, Statement, Transaction};

use super::Database;
use super::poison::{self, PoisonStatements};
use super::tables::{PgTables, TableStatements};
use crate::handler::Handler;
use crate::inbox::{
    DeadLetter, DeadLetters, Delivery, Inbox, Outcome, Policy, StorageError, StorageFault,
    run_handler, unix_millis,
};
use crate::message::Message;

/// How many times a batch that lost a race (serialization failure,
/// deadlock) is tried again before the conflict is reported.
const CONFLICT_RETRIES: u32 = 10;

/// One connection's inbox. Open it with [`crate::store::Store::inbox`].
pub struct PgInbox {
    database: Database,
    policy: Policy,
    connection: Option<Connection>,
}

/// An open connection and the statements prepared on it.
struct Connection {
    client: Client,
    statements: Statements,
}

struct Statements {
    claim: Statement,
    poison: PoisonStatements,
    tables: TableStatements,
}

impl PgInbox {
    pub(super) fn new(database: Database, policy: Policy) -> Result<Self, StorageError> {
        let mut inbox = Self {
            database,
            policy,
            connection: None,
        };
        inbox.connection()?;
        Ok(inbox)
    }

    /// The connection, reopened if the server dropped it. The fault tests
    /// also use it to change this connection's settings.
    pub fn client(&mut self) -> Result<&mut Client, StorageError> {
        Ok(&mut self.connection()?.client)
    }

    fn connection(&mut self) -> Result<&mut Connection, StorageError> {
        if self
            .connection
            .as_ref()
            .is_none_or(|connection| connection.client.is_closed())
        {
            let mut client = self.database.connect()?;
            let statements = Statements {
                claim: client.prepare(
                    "INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING RETURNING 1",
                )?,
                poison: PoisonStatements::prepare(&mut client)?,
                tables: TableStatements::prepare(&mut client)?,
            };
            self.connection = Some(Connection { client, statements });
        }
        Ok(self.connection.as_mut().expect("just opened"))
    }

    fn try_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let policy = self.policy;
        let Connection { client, statements } = self.connection()?;
        let received_at = unix_millis(SystemTime::now());
        let mut tx = client.transaction()?;
        let outcomes = batch
            .iter()
            .map(|delivery| deliver_one(&mut tx, statements, delivery, received_at, policy))
            .collect::<Result<Vec<_>, _>>()?;
        tx.commit()?;
        Ok(outcomes)
    }
}

impl Inbox for PgInbox {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let mut retry = 0;
        loop {
            match self.try_batch(batch) {
                Err(error)
                    if error.fault() == StorageFault::Conflict && retry < CONFLICT_RETRIES =>
                {
                    retry += 1;
                    tracing::debug!(%error, retry, "transaction conflict; retrying the batch");
                    std::thread::sleep(backoff(retry));
                }
                result => return result,
            }
        }
    }
}

impl DeadLetters for PgInbox {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        poison::dead_letters(&mut self.connection()?.client)
    }

    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        poison::failures(&mut self.connection()?.client, consumer, message_id)
    }

    fn redrive(
        &mut self,
        handler: &dyn Handler,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let Connection { client, statements } = self.connection()?;
        let now = unix_millis(SystemTime::now());
        let mut tx = client.transaction()?;
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        poison::forget(&mut tx, consumer, id)?;
        let delivery = Delivery::new(handler, message);
        let never_dead_letter = Policy {
            max_attempts: u32::MAX,
        };
        let outcome = deliver_one(&mut tx, statements, &delivery, now, never_dead_letter)?;
        if outcome == Outcome::Applied {
            poison::bury(&mut tx, consumer, id)?;
            tx.commit()?;
        }
        Ok(outcome)
    }
}

fn deliver_one(
    tx: &mut Transaction<'_>,
    statements: &Statements,
    delivery: &Delivery<'_>,
    received_at: i64,
    policy: Policy,
) -> Result<Outcome, StorageError> {
    let consumer = delivery.handler.consumer();
    let id = delivery.message.id.as_str();
    tx.batch_execute("SAVEPOINT delivery")?;
    let claimed = tx
        .query_opt(&statements.claim, &[&consumer, &id, &received_at])?
        .is_some();
    if !claimed {
        tx.batch_execute("RELEASE SAVEPOINT delivery")?;
        tracing::debug!(consumer, message_id = id, "duplicate delivery skipped");
        return Ok(Outcome::Duplicate);
    }
    if policy.gave_up_on(delivery.delivered) {
        let outcome = poison::park(tx, &statements.poison, delivery, received_at)?;
        tx.batch_execute("RELEASE SAVEPOINT delivery")?;
        return Ok(outcome);
    }
    match run_handler(delivery, &mut PgTables::new(tx, &statements.tables))? {
        Ok(()) => {
            tx.batch_execute("RELEASE SAVEPOINT delivery")?;
            Ok(Outcome::Applied)
        }
        Err(reason) => {
            tx.batch_execute("ROLLBACK TO SAVEPOINT delivery; RELEASE SAVEPOINT delivery")?;
            poison::record_failure(
                tx,
                &statements.poison,
                delivery,
                &reason,
                received_at,
                policy,
            )
        }
    }
}

/// 2, 4, 8... ms up to half a second, plus up to as much again at random,
/// so that workers that collided do not collide again in step.
fn backoff(retry: u32) -> Duration {
    let base = Duration::from_millis(1 << retry.min(9));
    let jitter = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    base + base.mul_f64(f64::from(jitter % 1000) / 1000.0)
}
