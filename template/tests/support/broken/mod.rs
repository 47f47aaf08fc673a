//! Known-broken implementations, kept so the tests can prove they catch
//! them. Each one is a mistake that looks right in review; the comment on
//! each says which scenario catches it and why. They are written once for
//! every database from the test kit's `Raw` steps; the traps only one database
//! has live in its own support module. None of this is ever used by the
//! consumer itself. One file per kind of mistake:
//!
//! * `inboxes`: the duplicate check itself (no inbox, check-then-act,
//!   record-first, ids minted or kept in memory, a failed COMMIT ignored);
//! * `ids`: ids "cleaned up" before they are compared;
//! * `letters`: dead letters and redrive;
//! * `faults`: database faults and handler statements that fail;
//! * `handlers`: handlers that do the wrong thing;
//! * `batches`: set-based runs whose failure is handled wrong;
//! * `pipeline`: settling too early, routing by anything but the key;
//! * `purges`: retention that deletes too much;
//! * `hangs`: waits that never end (run only in a process of their own).

mod batches;
mod faults;
mod handlers;
mod hangs;
mod ids;
mod inboxes;
mod letters;
mod pipeline;
mod purges;

pub use batches::*;
pub use faults::*;
pub use handlers::*;
pub use hangs::*;
pub use ids::*;
pub use inboxes::*;
pub use letters::*;
pub use pipeline::*;
pub use purges::*;

use {{crate_name}}::handlers::{BorrowedHandler, Handlers};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError};
use {{crate_name}}::message::Message;

use crate::support::database::Fixture;
use crate::support::harness::Raw;
use crate::support::harness::{InboxUnderTest, RealInbox, Scenario, ThisProject, now_millis};

/// Every broken inbox written here, for tests that run them all.
pub fn all_inboxes() -> Vec<Box<dyn InboxUnderTest<ThisProject>>> {
    vec![
        Box::new(NoInbox),
        Box::new(CheckThenAct),
        Box::new(RecordFirst),
        Box::new(MintedId),
        Box::new(AttemptsCountedInside),
        Box::new(RemembersInMemory),
        Box::new(FoldsCase),
        Box::new(TrimsIds),
        Box::new(NormalizesIds),
        Box::new(TruncatesIds),
        Box::new(IgnoresFailedCommit),
    ]
}

/// A broken inbox written as "one delivery at a time" on a raw connection.
pub struct OneAtATime<F> {
    raw: Box<dyn Raw<ThisProject>>,
    deliver: F,
}

impl<F> Inbox<Handlers> for OneAtATime<F>
where
    F: FnMut(
            &mut dyn Raw<ThisProject>,
            &BorrowedHandler<'_>,
            &Message,
        ) -> Result<Outcome, StorageError>
        + Send,
{
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        Ok(batch
            .iter()
            .map(|d| {
                (self.deliver)(self.raw.as_mut(), d.handler, d.message).unwrap_or_else(|error| {
                    self.raw.rollback();
                    Outcome::Failed(error.to_string())
                })
            })
            .collect())
    }
}

pub fn one_at_a_time<F>(fixture: &Fixture, deliver: F) -> Box<dyn Inbox<Handlers>>
where
    F: FnMut(
            &mut dyn Raw<ThisProject>,
            &BorrowedHandler<'_>,
            &Message,
        ) -> Result<Outcome, StorageError>
        + Send
        + 'static,
{
    Box::new(OneAtATime {
        raw: fixture.raw(),
        deliver,
    })
}

/// Runs the handler in the open transaction and commits, or rolls back and
/// reports the failure.
pub(super) fn apply_and_commit(
    raw: &mut dyn Raw<ThisProject>,
    handler: &BorrowedHandler<'_>,
    message: &Message,
) -> Result<Outcome, StorageError> {
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
}

/// The real algorithm (insert first, then apply, one transaction) written
/// by hand, for broken variants that change only its inputs.
pub fn insert_first(
    raw: &mut dyn Raw<ThisProject>,
    handler: &BorrowedHandler<'_>,
    message: &Message,
) -> Result<Outcome, StorageError> {
    raw.begin()?;
    if !raw.record(handler.consumer(), message.id.as_str(), now_millis())? {
        raw.rollback();
        return Ok(Outcome::Duplicate);
    }
    apply_and_commit(raw, handler, message)
}

/// A database-specific trap: a broken inbox, the scenarios it passes, and
/// the one that must catch it.
pub struct Trap {
    pub inbox: Box<dyn InboxUnderTest<ThisProject>>,
    pub passes: Vec<Scenario>,
    pub caught_by: Scenario,
}

/// The real inbox on a schema changed by `patch` (SQL run on a fresh
/// database): how a broken unique key is tried.
pub struct WithSchema {
    pub name: &'static str,
    pub patch: &'static str,
}

impl InboxUnderTest<ThisProject> for WithSchema {
    fn name(&self) -> String {
        self.name.to_owned()
    }
    fn prepare(&self, fixture: &Fixture) {
        fixture.execute(self.patch);
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        RealInbox::BATCHED.open(fixture)
    }
}
