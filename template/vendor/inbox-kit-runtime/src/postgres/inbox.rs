//! The inbox on PostgreSQL.
//!
//! Every batch is one transaction at READ COMMITTED, on a [`Pipelined`]
//! connection: `BEGIN` goes out with the claim, each savepoint with the
//! first statement of its delivery, so a delivery costs the round trips of
//! its handler's statements and nothing more. It starts by claiming
//! the inbox rows of all its deliveries with `INSERT ... ON CONFLICT DO
//! NOTHING RETURNING`: the rows it returns are the new deliveries, the
//! others are duplicates, and nothing aborts the transaction (a caught
//! unique violation would, without a savepoint). A second worker claiming
//! the same message waits for the first one's transaction, then finds the
//! row taken, or free if the first rolled back. Each new delivery's handler
//! then runs under a SAVEPOINT; a failing one rolls back to it, gives its
//! claim back, and is counted after that (see `poison.rs`). A batch whose
//! claim took nothing (all duplicates, the second worker's case) wrote
//! nothing, so its `COMMIT` is sent without waiting for the answer.
//!
//! Serialization failures and deadlocks are not anyone's fault: the whole
//! batch is retried with backoff, and never reported as a duplicate or a
//! failed delivery. A connection the server dropped is reopened at the
//! next batch.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use postgres::Statement;

use super::poison::{self, PoisonStatements};
use super::{Connect, Exec, PgHandlers, Pipelined};
use crate::delivery::{DeadLetters, Delivery, Inbox};
use crate::handler::Subscriber;
use crate::inbox::{DeadLetter, Failure, Outcome, Policy, guarded, unix_millis};
use crate::message::Message;
use crate::steps::{Step, steps};
use crate::storage::{StorageError, StorageFault};

/// How many times a batch that lost a race (serialization failure,
/// deadlock) is tried again before the conflict is reported.
pub const CONFLICT_RETRIES: u32 = 10;

/// One connection's inbox, for the handlers of registry `R`, connecting
/// through `D`.
pub struct PgInbox<R: PgHandlers, D> {
    database: D,
    policy: Policy,
    connection: Option<Connection<R>>,
}

/// An open connection and the statements prepared on it.
struct Connection<R: PgHandlers> {
    client: Pipelined,
    statements: Statements<R>,
}

struct Statements<R: PgHandlers> {
    /// Claims every delivery of a batch at once, in key order (so that two
    /// workers claiming overlapping batches lock rows in the same order).
    claim_all: Statement,
    claim_one: Statement,
    give_back: Statement,
    poison: PoisonStatements,
    tables: R::Statements,
}

impl<R: PgHandlers> Statements<R> {
    fn prepare(client: &mut Pipelined) -> Result<Self, StorageError> {
        Ok(Self {
            claim_all: client.prepare(
                "INSERT INTO inbox (consumer, message_id, received_at)
                 SELECT consumer, message_id, $3
                 FROM unnest($1::text[], $2::text[]) AS claim (consumer, message_id)
                 ORDER BY consumer, message_id
                 ON CONFLICT DO NOTHING
                 RETURNING consumer, message_id",
            )?,
            claim_one: client.prepare(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, $3)
                 ON CONFLICT DO NOTHING RETURNING 1",
            )?,
            give_back: client
                .prepare("DELETE FROM inbox WHERE consumer = $1 AND message_id = $2")?,
            poison: PoisonStatements::prepare(client)?,
            tables: R::prepare(client)?,
        })
    }
}

impl<R: PgHandlers, D: Connect> PgInbox<R, D> {
    /// The inbox on a connection `database` opens now, giving up on a
    /// message as `policy` says.
    pub fn new(database: D, policy: Policy) -> Result<Self, StorageError> {
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
    pub fn client(&mut self) -> Result<&mut Pipelined, StorageError> {
        Ok(&mut self.connection()?.client)
    }

    fn connection(&mut self) -> Result<&mut Connection<R>, StorageError> {
        if self
            .connection
            .as_ref()
            .is_none_or(|connection| connection.client.is_closed())
        {
            let mut client = self.database.inbox_connection()?;
            let statements = Statements::prepare(&mut client)?;
            self.connection = Some(Connection { client, statements });
        }
        Ok(self.connection.as_mut().expect("just opened"))
    }

    /// The batch in one transaction, committed; rolled back on any error.
    fn try_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        let policy = self.policy;
        let Connection { client, statements } = self.connection()?;
        client.begin();
        let committed = BatchTx::claim(client, statements, batch, policy)
            .and_then(|mut work| Ok((work.deliver_all(batch)?, work.claimed_nothing)))
            .and_then(|(outcomes, claimed_nothing)| {
                if claimed_nothing {
                    // All duplicates: nothing ran after the claim.
                    client.commit_unawaited();
                } else {
                    client.commit()?;
                }
                Ok(outcomes)
            });
        client.rollback();
        committed
    }
}

impl<R: PgHandlers, D: Connect> Inbox<R> for PgInbox<R, D> {
    fn deliver_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
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

impl<R: PgHandlers, D: Connect> DeadLetters<R> for PgInbox<R, D> {
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError> {
        poison::dead_letters(&mut self.connection()?.client)
    }

    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError> {
        poison::failures(&mut self.connection()?.client, consumer, message_id)
    }

    fn redrive<'a>(
        &mut self,
        handler: &'a R::Handler<'a>,
        message: &'a Message<R::Event>,
    ) -> Result<Outcome, StorageError> {
        let Connection { client, statements } = self.connection()?;
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        let delivery = [Delivery::<R>::new(handler, message)];
        let never_dead_letter = Policy {
            max_attempts: u32::MAX,
        };
        client.begin();
        let mut redrive = || {
            poison::forget(client, consumer, id)?;
            let outcome = BatchTx::claim(client, statements, &delivery, never_dead_letter)?
                .deliver(&delivery[0])?;
            if outcome == Outcome::Applied {
                poison::bury(client, consumer, id)?;
                client.commit()?;
            }
            Ok(outcome)
        };
        let outcome = redrive();
        // Ends the transaction unless it committed.
        client.rollback();
        outcome
    }
}

/// One batch's transaction: every inbox row claimed up front, then one
/// savepoint per delivery around its handler.
///
/// Claiming the batch in one statement saves a round trip per delivery,
/// and a duplicate costs nothing more. A delivery whose handler fails rolls
/// back to its savepoint and gives its claim back (deletes its inbox row),
/// so that its redelivery applies it, and so does a later copy in the same
/// batch. Savepoints, their releases and rollbacks are deferred: each goes
/// out with the next statement.
struct BatchTx<'a, R: PgHandlers> {
    tx: &'a mut Pipelined,
    statements: &'a Statements<R>,
    received_at: i64,
    policy: Policy,
    /// Claimed by the batch's claim and not used yet.
    claimed: HashSet<(String, String)>,
    /// Given back by a failed delivery: a later copy claims again.
    given_back: HashSet<(String, String)>,
    /// Whether the claim found every delivery a duplicate, so that the
    /// transaction writes nothing.
    claimed_nothing: bool,
    in_savepoint: bool,
}

impl<'a, R: PgHandlers> BatchTx<'a, R> {
    fn claim(
        tx: &'a mut Pipelined,
        statements: &'a Statements<R>,
        batch: &[Delivery<'_, R>],
        policy: Policy,
    ) -> Result<Self, StorageError> {
        let received_at = unix_millis(SystemTime::now());
        let consumers: Vec<&str> = batch.iter().map(|d| d.handler.consumer()).collect();
        let ids: Vec<&str> = batch.iter().map(|d| d.message.id.as_str()).collect();
        let claimed: HashSet<_> = tx
            .query(&statements.claim_all, &[&consumers, &ids, &received_at])?
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        Ok(Self {
            claimed_nothing: claimed.is_empty(),
            tx,
            statements,
            received_at,
            policy,
            claimed,
            given_back: HashSet::new(),
            in_savepoint: false,
        })
    }

    /// Every delivery of the batch, step by step (see [`steps`]).
    fn deliver_all(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(batch.len());
        for step in steps(batch, self.policy) {
            match step {
                Step::Alone(at) => outcomes.push(self.deliver(&batch[at])?),
                Step::Together(run) => outcomes.extend(self.deliver_together(&batch[run])?),
            }
        }
        Ok(outcomes)
    }

    fn deliver(&mut self, delivery: &Delivery<'_, R>) -> Result<Outcome, StorageError> {
        if !self.take_claim(delivery)? {
            return Ok(Outcome::Duplicate);
        }
        self.deliver_claimed(delivery)
    }

    /// A run of deliveries to one handler through its set-based path, under
    /// one savepoint; if that fails, rolled back and delivered one at a
    /// time, so that only the failing ones fail.
    fn deliver_together(&mut self, run: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(run.len());
        let mut new = Vec::new();
        for (at, delivery) in run.iter().enumerate() {
            if self.take_claim(delivery)? {
                new.push(at);
                outcomes.push(Outcome::Applied);
            } else {
                outcomes.push(Outcome::Duplicate);
            }
        }
        let Some(handler) = run.first().map(|first| first.handler) else {
            return Ok(outcomes);
        };
        if new.is_empty() {
            return Ok(outcomes);
        }
        let messages: Vec<&Message<R::Event>> = new.iter().map(|&at| run[at].message).collect();
        self.savepoint();
        let (tx, tables) = (&mut *self.tx, &self.statements.tables);
        let failure = match guarded(|| R::apply_all(handler, tx, tables, &messages))? {
            Ok(()) => return Ok(outcomes),
            Err(failure) => failure,
        };
        tracing::debug!(
            ?failure,
            deliveries = new.len(),
            "set-based attempt failed; applying its deliveries one at a time"
        );
        self.roll_back_savepoint();
        for at in new {
            outcomes[at] = self.deliver_claimed(&run[at])?;
        }
        Ok(outcomes)
    }

    /// Takes the delivery's claim: made by the batch's claim, or made again
    /// if a failed copy earlier in the batch gave it back. `false`: a
    /// duplicate.
    fn take_claim(&mut self, delivery: &Delivery<'_, R>) -> Result<bool, StorageError> {
        let consumer = delivery.handler.consumer();
        let id = delivery.message.id.as_str();
        let key = (consumer.to_owned(), id.to_owned());
        let claimed = if self.claimed.remove(&key) {
            true
        } else if self.given_back.remove(&key) {
            let row = self.tx.query_opt(
                &self.statements.claim_one,
                &[&consumer, &id, &self.received_at],
            )?;
            row.is_some()
        } else {
            false
        };
        if !claimed {
            tracing::debug!(consumer, message_id = id, "duplicate delivery skipped");
        }
        Ok(claimed)
    }

    /// Opens the savepoint of the next delivery (or run), releasing the
    /// last one's, with the next statement.
    fn savepoint(&mut self) {
        self.tx.defer(if self.in_savepoint {
            "RELEASE SAVEPOINT delivery; SAVEPOINT delivery"
        } else {
            "SAVEPOINT delivery"
        });
        self.in_savepoint = true;
    }

    /// Undoes everything since the savepoint, with the next statement.
    fn roll_back_savepoint(&mut self) {
        self.tx
            .defer("ROLLBACK TO SAVEPOINT delivery; RELEASE SAVEPOINT delivery");
        self.in_savepoint = false;
    }

    /// Applies a claimed delivery under its own savepoint.
    fn deliver_claimed(&mut self, delivery: &Delivery<'_, R>) -> Result<Outcome, StorageError> {
        self.savepoint();
        if self.policy.gave_up_on(delivery.delivered) {
            return poison::park(self.tx, &self.statements.poison, delivery, self.received_at);
        }
        let (tx, tables) = (&mut *self.tx, &self.statements.tables);
        let failure = match guarded(|| R::apply(delivery.handler, tx, tables, delivery.message))? {
            Ok(()) => return Ok(Outcome::Applied),
            Err(failure) => failure,
        };
        self.roll_back_savepoint();
        let poison = &self.statements.poison;
        match failure {
            // Refused: dead-lettered at once; its claim stays, so that
            // redeliveries are duplicates.
            Failure::Refused(reason) => {
                poison::refuse(self.tx, poison, delivery, &reason, self.received_at)
            }
            // Failed: the claim is given back, so that a redelivery (or a
            // later copy in this batch) applies it.
            Failure::Failed(reason) => {
                let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
                self.tx
                    .execute(&self.statements.give_back, &[&consumer, &id])?;
                self.given_back.insert((consumer.to_owned(), id.to_owned()));
                poison::record_failure(
                    self.tx,
                    poison,
                    delivery,
                    &reason,
                    self.received_at,
                    self.policy,
                )
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_half_a_second_plus_at_most_as_much_again() {
        for (retry, base) in [(1, 2), (2, 4), (5, 32), (9, 512), (10, 512), (30, 512)] {
            let base = Duration::from_millis(base);
            let waited = backoff(retry);
            assert!(
                waited >= base && waited < base * 2,
                "retry {retry}: {waited:?}, expected {base:?} plus less than as much again"
            );
        }
    }
}
