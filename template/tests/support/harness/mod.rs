//! The conformance harness: delivery schedules, and the judge that says
//! whether a consumer came through them "effectively once".
//!
//! A consumer is judged on three counts after every schedule (duplicates,
//! parallel workers, failures then redelivery, a restart...):
//!
//! * its state, and which messages it refused, equal the subject's
//!   **model**: written by hand as a pure function of the distinct
//!   messages, so a handler that does nothing, the wrong thing, or lets
//!   through what it must refuse fails;
//! * they equal the **once-only oracle** too: each distinct message applied
//!   once, straight through the handler, to a fresh database;
//! * the inbox holds one row per distinct message, and the outcomes add up.
//!
//! To test a handler, implement [`Subject`] for it (see `subjects.rs`) and
//! add it to `subjects::all()`: every required scenario then runs for it.
//! Each scenario has a `play_` form that runs the schedule and reports what
//! it left behind, and a judged form that returns the same [`Play`] once it
//! passed, or the [`Violation`] that says what went wrong.
//!
//! What does not depend on this project (what the judge holds a play
//! against, the knobs and seeded generator, handlers wrapped to fail on
//! purpose, the hang watchdog) is the test kit's
//! (`inbox_kit_testkit::harness`), re-exported here.

mod inboxes;
mod judge;
mod scenarios;

pub use inbox_kit_testkit::harness::env::{
    Prng, env_number, now_millis, stress_messages, stress_workers,
};
pub use inbox_kit_testkit::harness::faults::{AlwaysFail, FailFirstAttempt, FailFor};
pub use inbox_kit_testkit::harness::hangs;
pub use inboxes::{
    DeadLettersUnderTest, InboxUnderTest, InboxWithLetters, OnPath, Path, RealDeadLetters,
    RealInbox,
};
pub use judge::{Expected, ExpectedOf, Judge, Model, Observed, Play, Violation, distinct};
pub use scenarios::*;

use std::fmt::Debug;
use std::sync::Arc;

use {{crate_name}}::handlers::{AnyHandler, Tables};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, Policy, StorageError};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::store::Store;

use crate::support::database::Fixture;

/// A handler under test, with what the harness needs to judge it.
///
/// The harness never makes up a message: every message a scenario delivers
/// is a new business fact from [`Subject::fact`], a resend of one
/// ([`Subject::resend`]), or a repeat of one under a new id
/// ([`Subject::repeat`]), each used for what it means.
pub trait Subject: Sync {
    /// The part of the database the handler owns, read back for comparison.
    type State: PartialEq + Debug + Send;

    fn handler(&self) -> Arc<AnyHandler>;
    /// Business state every scenario starts from (e.g. an account with 1,000).
    fn seed(&self, tables: &mut dyn Tables) -> Result<(), StorageError>;
    /// A new business fact (a new payment, a refund with a refund id of its
    /// own...) sent under the message id `id`. `n` numbers the facts of a
    /// scenario from 0, for subjects that vary them (accounts, amounts,
    /// the messages they must refuse). Facts must not depend on each
    /// other's order: rules across messages belong to [`Subject::contended`].
    fn fact(&self, id: MessageId, n: usize) -> Message;
    /// `message` sent again by its sender under the same id, with other
    /// content (a fresh timestamp, a corrected payload). It is still the
    /// same message: the inbox refuses it, and the handler's own tables must
    /// refuse it too if it ever gets past the inbox.
    fn resend(&self, message: &Message) -> Message;
    /// The business fact of `message` sent again under the new message id
    /// `id` (a producer that lost track and published it twice): its
    /// business key (a refund id in the payload) must refuse it, since the
    /// inbox cannot. `None` when the message id is the business key (one
    /// payment is one message): a new id is then a new fact.
    fn repeat(&self, message: &Message, id: MessageId) -> Option<Message>;
    /// Reads the handler's state.
    fn state(&self, tables: &mut dyn Tables) -> Result<Self::State, StorageError>;
    /// The model: what applying each of `messages` (distinct) once, in this
    /// order, must give: the state, and which messages the handler refuses.
    /// Computed by hand, without a database.
    fn model(&self, messages: &[Message]) -> Model<Self::State>;
    /// A few different facts about one business entity whose outcomes
    /// depend on their order (refunds of one payment that together exceed
    /// it), for the rules-across-messages scenario: delivered at once, they
    /// must end as some serial order of them would. `round` numbers the
    /// rounds: each round's facts are about a new entity. None by default:
    /// a consumer without rules across messages.
    fn contended(&self, _round: usize) -> Vec<Message> {
        Vec::new()
    }
    /// A fact its handler cannot apply for now and must fail on (a payment
    /// from an account never opened), sent under `id`, for the
    /// cannot-apply scenario. None by default: a handler that fails only
    /// when something else fails.
    fn cannot_apply(&self, _id: MessageId) -> Option<Message> {
        None
    }
}

/// `count` new facts of `subject`, ids `<prefix>00001` and up.
pub fn facts<S: Subject + ?Sized>(subject: &S, prefix: &str, count: usize) -> Vec<Message> {
    (0..count)
        .map(|n| {
            let id = MessageId::new(format!("{prefix}{:05}", n + 1)).expect("a valid id");
            subject.fact(id, n)
        })
        .collect()
}

/// The part of a [`Subject`] that set-up needs, without its state type, so
/// that subjects of different types can share one fixture.
pub trait Seed {
    fn seed_handler(&self) -> Arc<AnyHandler>;
    fn seed_tables(&self, tables: &mut dyn Tables) -> Result<(), StorageError>;
}

impl<S: Subject> Seed for S {
    fn seed_handler(&self) -> Arc<AnyHandler> {
        self.handler()
    }
    fn seed_tables(&self, tables: &mut dyn Tables) -> Result<(), StorageError> {
        self.seed(tables)
    }
}

/// A fresh database with every table, prepared for `inbox`, seeded for
/// `subjects`.
pub fn fixture_for(inbox: &dyn InboxUnderTest, subjects: &[&dyn Seed]) -> Fixture {
    let fixture = Fixture::new();
    inbox.prepare(&fixture);
    fixture.with_tables(|tables| {
        subjects
            .iter()
            .try_for_each(|subject| subject.seed_tables(tables))
    });
    fixture
}

/// Inbox rows recorded for `consumer`, counted by the fixture's own SQL
/// on its own connection (a new connection per judge costs more than a
/// parallel round on PostgreSQL).
pub fn inbox_rows(fixture: &Fixture, consumer: &str) -> usize {
    fixture.inbox_rows(consumer)
}

/// The subject's state in `fixture`, read on the fixture's connection.
pub fn state_of<S: Subject>(fixture: &Fixture, subject: &S) -> S::State {
    fixture.with_tables(|tables| subject.state(tables))
}

/// Asserts that `subject`'s state in `fixture`, and the messages it
/// refused, are each distinct message of `applied` applied once, judged by
/// the subject's model and by the once-applied oracle; the panic lists
/// what differs.
#[track_caller]
pub fn assert_applied_once<S: Subject>(fixture: &Fixture, subject: &S, applied: &[Message]) {
    let problems = applied_once_problems(fixture, subject, applied);
    assert!(
        problems.is_empty(),
        "{} is not each message applied once: {}",
        subject.handler().consumer(),
        problems.join("; ")
    );
}

/// What [`assert_applied_once`] would complain about (nothing: the state
/// is each message applied once).
pub fn applied_once_problems<S: Subject>(
    fixture: &Fixture,
    subject: &S,
    applied: &[Message],
) -> Vec<String> {
    let consumer = subject.handler().consumer();
    let refused = fixture
        .dead_letters()
        .into_iter()
        .filter(|letter| letter.consumer == consumer && letter.refused)
        .map(|letter| letter.message_id)
        .collect();
    Expected::of(subject, applied)
        .unwrap_or_else(|violation| panic!("{violation:?}"))
        .problems(&state_of(fixture, subject), &refused)
}

/// A [`Subject`] without its state type, so that subjects of different
/// types can sit in one list (`subjects::all()`).
pub trait AnySubject: Sync {
    /// The consumer the subject tests.
    fn consumer(&self) -> &'static str;
    /// Runs every required scenario for it; returns what was violated.
    fn required_scenarios(&self) -> Vec<Violation>;
}

impl<S: Subject> AnySubject for S {
    fn consumer(&self) -> &'static str {
        self.handler().consumer()
    }
    fn required_scenarios(&self) -> Vec<Violation> {
        required_scenarios(self)
    }
}
