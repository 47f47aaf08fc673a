//! Known-broken implementations, kept so that the tests can prove they
//! catch them. Each is a mistake that looks right in review; the comment on
//! each says which scenario catches it and why. Each is written once, for
//! any project, from the test kit's [`Raw`] steps on the project's
//! database, so it is tried on every database; the traps only one database
//! has stay with that database's fixture. One file per kind of mistake:
//!
//! * `inboxes`: the duplicate check itself (no inbox, check-then-act,
//!   record-first, ids minted or kept in memory, a failed COMMIT ignored);
//! * `ids`: ids "cleaned up" before they are compared;
//! * `letters`: dead letters and redrive;
//! * `batches`: set-based runs whose failure is handled wrong;
//! * `faults`: database faults held against the message, taken as final
//!   or as duplicates, and batches without a savepoint per delivery;
//! * `handlers`: any handler wrapped to do nothing, to take its refusals
//!   for failures, or to go under another consumer's name;
//! * `pipeline`: settling too early, routing by anything but the key;
//! * `purges`: retention that deletes what it must keep, or miscounts;
//! * `schemas`: the real inbox on a schema with a broken key, and a
//!   database's trap with the scenarios it passes and the one that
//!   catches it;
//! * `hangs`: waits that never end (run only in a test process of their
//!   own, since ending it is how a hang fails).
//!
//! The required scenarios take each as an inbox under test
//! ([`InboxUnderTest`], or
//! [`DeadLettersUnderTest`](crate::harness::DeadLettersUnderTest)), and a
//! project's `teeth` tests show that one of them fails for each, every run.

mod batches;
mod faults;
mod handlers;
mod hangs;
mod ids;
mod inboxes;
mod letters;
mod pipeline;
mod purges;
mod schemas;

pub use batches::*;
pub use faults::*;
pub use handlers::*;
pub use hangs::*;
pub use ids::*;
pub use inboxes::*;
pub use letters::*;
pub use pipeline::*;
pub use purges::*;
pub use schemas::*;

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::storage::StorageError;

use crate::harness::env::now_millis;
use crate::harness::{Fixture, HandlerOf, InboxUnderTest, Project, Raw};

/// Every broken inbox written here, for tests that run them all.
pub fn all_inboxes<P: Project>() -> Vec<Box<dyn InboxUnderTest<P>>> {
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
pub struct OneAtATime<P: Project, F> {
    raw: Box<dyn Raw<P>>,
    deliver: F,
}

impl<P: Project, F> Inbox<P::Registry> for OneAtATime<P, F>
where
    F: FnMut(
            &mut dyn Raw<P>,
            &HandlerOf<'_, P>,
            &Message<P::Event>,
        ) -> Result<Outcome, StorageError>
        + Send,
{
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
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

pub fn one_at_a_time<P: Project>(
    fixture: &P::Fixture,
    deliver: impl FnMut(
        &mut dyn Raw<P>,
        &HandlerOf<'_, P>,
        &Message<P::Event>,
    ) -> Result<Outcome, StorageError>
    + Send
    + 'static,
) -> Box<dyn Inbox<P::Registry>> {
    Box::new(OneAtATime {
        raw: fixture.raw(),
        deliver,
    })
}

/// Runs the handler in the open transaction and commits, or rolls back and
/// reports the failure.
pub fn apply_and_commit<P: Project>(
    raw: &mut dyn Raw<P>,
    handler: &HandlerOf<'_, P>,
    message: &Message<P::Event>,
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
pub fn insert_first<P: Project>(
    raw: &mut dyn Raw<P>,
    handler: &HandlerOf<'_, P>,
    message: &Message<P::Event>,
) -> Result<Outcome, StorageError> {
    raw.begin()?;
    if !raw.record(handler.consumer(), message.id.as_str(), now_millis())? {
        raw.rollback();
        return Ok(Outcome::Duplicate);
    }
    apply_and_commit(raw, handler, message)
}
