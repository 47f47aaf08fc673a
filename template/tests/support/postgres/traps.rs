//! Broken designs that only PostgreSQL has, and broken keys written in
//! PostgreSQL's SQL: each with the scenario that must catch it (see
//! `teeth`).

use postgres::error::SqlState;

use {{crate_name}}::handlers::{BorrowedHandler, Handlers};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError};
use {{crate_name}}::message::Message;

use super::{Fixture, PgRaw};
use crate::support::broken::{Trap, WithSchema, one_at_a_time};
use crate::support::harness::Raw;
use crate::support::harness::{InboxUnderTest, Scenario, ThisProject, now_millis};

/// The traps of this database, for `teeth`.
pub fn traps() -> Vec<Trap<ThisProject>> {
    vec![
        Trap {
            inbox: Box::new(keyed_by_message_id()),
            passes: vec![Scenario::RunTwice, Scenario::Parallel],
            caught_by: Scenario::BothConsumers,
        },
        Trap {
            inbox: Box::new(UniqueViolationWithoutSavepoint),
            passes: vec![],
            caught_by: Scenario::RunTwice,
        },
        Trap {
            inbox: Box::new(SelectForUpdateFirst),
            passes: vec![Scenario::RunTwice],
            caught_by: Scenario::Parallel,
        },
        Trap {
            inbox: Box::new(OnConflictResultIgnored),
            passes: vec![],
            caught_by: Scenario::RunTwice,
        },
        Trap {
            inbox: Box::new(ClaimOnItsOwnConnection),
            passes: vec![Scenario::RunTwice, Scenario::Parallel],
            caught_by: Scenario::FailedCommit,
        },
    ]
}

/// The inbox keyed by message id alone. Passes every single-consumer test.
/// Caught by both consumers: once `debit` has recorded a message, `notify`
/// finds its id taken and never sends the notifications.
pub fn keyed_by_message_id() -> WithSchema {
    WithSchema {
        name: "inbox keyed by message id alone",
        patch: "DROP TABLE inbox CASCADE;
                CREATE TABLE inbox (
                    consumer    text   NOT NULL,
                    message_id  text   COLLATE \"C\" NOT NULL PRIMARY KEY,
                    received_at bigint NOT NULL
                );",
    }
}

/// Broken unique keys on the `debit` ledger's `debits` table.
pub fn broken_ledger_keys() -> Vec<WithSchema> {
    vec![
        WithSchema {
            name: "debits with no unique key",
            patch: "DROP TABLE debits;
                    CREATE TABLE debits (payment_id text NOT NULL, account bigint NOT NULL, amount bigint NOT NULL);",
        },
        WithSchema {
            name: "debits unique per account (too coarse)",
            patch: "DROP TABLE debits;
                    CREATE TABLE debits (payment_id text NOT NULL, account bigint NOT NULL UNIQUE, amount bigint NOT NULL);",
        },
        WithSchema {
            name: "debits unique per payment and amount (too fine)",
            patch: "DROP TABLE debits;
                    CREATE TABLE debits (payment_id text NOT NULL, account bigint NOT NULL, amount bigint NOT NULL,
                                         PRIMARY KEY (payment_id, amount));",
        },
    ]
}

/// Broken unique keys on the `refund` consumer's `refunds` table.
pub fn broken_refund_keys() -> Vec<WithSchema> {
    vec![
        WithSchema {
            name: "refunds with no unique key",
            patch: "DROP TABLE refunds;
                    CREATE TABLE refunds (refund_id text NOT NULL, payment_id text NOT NULL,
                                          account bigint NOT NULL, amount bigint NOT NULL);",
        },
        WithSchema {
            name: "refunds unique per payment (too coarse)",
            patch: "DROP TABLE refunds;
                    CREATE TABLE refunds (refund_id text NOT NULL, payment_id text NOT NULL UNIQUE,
                                          account bigint NOT NULL, amount bigint NOT NULL);",
        },
        WithSchema {
            name: "refunds unique per refund and amount (too fine)",
            patch: "DROP TABLE refunds;
                    CREATE TABLE refunds (refund_id text NOT NULL, payment_id text NOT NULL,
                                          account bigint NOT NULL, amount bigint NOT NULL,
                                          PRIMARY KEY (refund_id, amount));",
        },
    ]
}

/// Broken unique keys on the `notify` outbox.
pub fn broken_outbox_keys() -> Vec<WithSchema> {
    vec![
        WithSchema {
            name: "notifications with no unique key",
            patch: "DROP TABLE notifications;
                    CREATE TABLE notifications (event_id text NOT NULL, channel text NOT NULL,
                                                account bigint NOT NULL, body text NOT NULL,
                                                trace_parent text);",
        },
        WithSchema {
            name: "notifications unique per event (too coarse)",
            patch: "DROP TABLE notifications;
                    CREATE TABLE notifications (event_id text NOT NULL UNIQUE, channel text NOT NULL,
                                                account bigint NOT NULL, body text NOT NULL,
                                                trace_parent text);",
        },
        WithSchema {
            name: "notifications unique per event, channel and account (too fine)",
            patch: "DROP TABLE notifications;
                    CREATE TABLE notifications (event_id text NOT NULL, channel text NOT NULL,
                                                account bigint NOT NULL, body text NOT NULL, trace_parent text,
                                                UNIQUE (event_id, channel, account));",
        },
    ]
}

/// A batch in one transaction, the inbox row inserted plainly and a unique
/// violation (23505) caught as "duplicate", but without a savepoint. On
/// PostgreSQL the failed INSERT aborts the whole transaction (every later
/// statement fails with 25P02) and its COMMIT becomes a ROLLBACK: the rest
/// of the batch is reported failed, and the deliveries reported applied
/// before the duplicate are lost. Caught by run twice, whose second round
/// is all duplicates.
pub struct UniqueViolationWithoutSavepoint;

struct NoSavepoint(PgRaw);

impl Inbox<Handlers> for NoSavepoint {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.0.begin()?;
        let mut outcomes = Vec::new();
        for d in batch {
            let inserted = self.0.client().execute(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES ($1, $2, $3)",
                &[&d.handler.consumer(), &d.message.id.as_str(), &now_millis()],
            );
            outcomes.push(match inserted {
                Err(error) if error.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    Outcome::Duplicate
                }
                Err(error) => Outcome::Failed(error.to_string()),
                Ok(_) => match self.0.apply(d.handler, d.message) {
                    Ok(()) => Outcome::Applied,
                    Err(error) => Outcome::Failed(error.to_string()),
                },
            });
        }
        self.0.commit()?;
        Ok(outcomes)
    }
}

impl InboxUnderTest<ThisProject> for UniqueViolationWithoutSavepoint {
    fn name(&self) -> String {
        "unique violation caught without a savepoint".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        Box::new(NoSavepoint(PgRaw::new(
            fixture.database().connect().expect("connect"),
        )))
    }
}

/// `SELECT ... FOR UPDATE` of the inbox row before inserting it, as if the
/// lock made the check safe. A row that does not exist yet locks nothing,
/// so this is still check-then-act: passes run twice, caught by parallel.
pub struct SelectForUpdateFirst;

impl InboxUnderTest<ThisProject> for SelectForUpdateFirst {
    fn name(&self) -> String {
        "SELECT ... FOR UPDATE before the insert".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        Box::new(ForUpdate(PgRaw::new(
            fixture.database().connect().expect("connect"),
        )))
    }
}

struct ForUpdate(PgRaw);

impl ForUpdate {
    fn deliver(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        self.0.begin()?;
        let seen = self.0.client().query_opt(
            "SELECT 1 FROM inbox WHERE consumer = $1 AND message_id = $2 FOR UPDATE",
            &[&consumer, &id],
        )?;
        if seen.is_some() {
            self.0.rollback();
            return Ok(Outcome::Duplicate);
        }
        if let Err(error) = self.0.apply(handler, message) {
            self.0.rollback();
            return Ok(Outcome::Failed(error.to_string()));
        }
        self.0.record(consumer, id, now_millis())?;
        self.0.commit()?;
        Ok(Outcome::Applied)
    }
}

impl Inbox<Handlers> for ForUpdate {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        Ok(batch
            .iter()
            .map(|d| {
                self.deliver(d.handler, d.message).unwrap_or_else(|error| {
                    self.0.rollback();
                    Outcome::Failed(error.to_string())
                })
            })
            .collect())
    }
}

/// `INSERT ... ON CONFLICT DO NOTHING` for the inbox row, and the handler
/// run whatever it returned: the row count that says "duplicate" is thrown
/// away. Caught by run twice.
pub struct OnConflictResultIgnored;

impl InboxUnderTest<ThisProject> for OnConflictResultIgnored {
    fn name(&self) -> String {
        "ON CONFLICT DO NOTHING result ignored".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        one_at_a_time::<ThisProject>(fixture, |raw, handler, message| {
            raw.begin()?;
            let _claimed = raw.record(handler.consumer(), message.id.as_str(), now_millis())?;
            match raw.apply(handler, message) {
                Ok(()) => {
                    raw.commit()?;
                    Ok(Outcome::Applied)
                }
                Err(error) => {
                    raw.rollback();
                    Ok(Outcome::Failed(error.to_string()))
                }
            }
        })
    }
}

/// Broken inboxes for a handler's statement that ends the whole
/// transaction: none, since PostgreSQL has no such statement.
pub fn whole_transaction_traps() -> Vec<Box<dyn InboxUnderTest<ThisProject>>> {
    Vec::new()
}

/// The inbox row claimed on a second connection of its own, in autocommit
/// (`INSERT ... ON CONFLICT DO NOTHING` is atomic, so why not), and the
/// handler run in a transaction on the first one. Duplicates are caught,
/// in parallel too, and a failing handler gives its claim back. But when
/// the handler's COMMIT fails, the claim is already committed: the
/// redelivery is a "duplicate" and the message is lost. Caught by the
/// failed commit (whose tripwire is on the handler's tables, so it fails
/// the delivery's own transaction).
pub struct ClaimOnItsOwnConnection;

struct TwoConnections {
    claims: PgRaw,
    work: PgRaw,
}

impl TwoConnections {
    fn deliver(
        &mut self,
        handler: &BorrowedHandler<'_>,
        message: &Message,
    ) -> Result<Outcome, StorageError> {
        let (consumer, id) = (handler.consumer(), message.id.as_str());
        if !self.claims.record(consumer, id, now_millis())? {
            return Ok(Outcome::Duplicate);
        }
        self.work.begin()?;
        if let Err(error) = self.work.apply(handler, message) {
            self.work.rollback();
            self.claims.delete_inbox_row(consumer, id)?;
            return Ok(Outcome::Failed(error.to_string()));
        }
        // The COMMIT can fail too, and nobody gives the claim back then.
        if let Err(error) = self.work.commit() {
            self.work.rollback();
            return Ok(Outcome::Failed(error.to_string()));
        }
        Ok(Outcome::Applied)
    }
}

impl Inbox<Handlers> for TwoConnections {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        batch
            .iter()
            .map(|d| self.deliver(d.handler, d.message))
            .collect()
    }
}

impl InboxUnderTest<ThisProject> for ClaimOnItsOwnConnection {
    fn name(&self) -> String {
        "inbox row claimed on a connection of its own".into()
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        let connect = || PgRaw::new(fixture.database().connect().expect("connect"));
        Box::new(TwoConnections {
            claims: connect(),
            work: connect(),
        })
    }
}
