//! A handler under test, with what the harness needs to judge it: the
//! contract every subject of a project implements, and the checks that
//! hold a fixture's state against it.
//!
//! The harness never makes up a message: every message a scenario
//! delivers is a new business fact from [`Subject::fact`], a resend of one
//! ([`Subject::resend`]), or a repeat of one under a new id
//! ([`Subject::repeat`]), each used for what it means.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::storage::StorageError;

use super::project::{AnyHandlerOf, Project};

/// The events of a subject's project.
pub type EventOf<S> = <<S as Subject>::Project as Project>::Event;

/// The tables of a subject's project.
pub type TablesOf<'t, S> = <<S as Subject>::Project as Project>::Tables<'t>;

/// What a subject's model says some messages must give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model<State> {
    pub state: State,
    /// The messages the handler must refuse, by id, with why.
    pub refused: BTreeMap<String, String>,
}

impl<State> Model<State> {
    /// Every message applied, none refused.
    pub fn applied(state: State) -> Self {
        Self {
            state,
            refused: BTreeMap::new(),
        }
    }
}

/// A handler under test. A subject's methods take the project's tables as
/// `&mut (dyn Tables + '_)`.
pub trait Subject: Sync {
    /// The project the handler belongs to.
    type Project: Project;
    /// The part of the database the handler owns, read back for comparison.
    type State: PartialEq + Debug + Send;

    fn handler(&self) -> Arc<AnyHandlerOf<Self::Project>>;
    /// Business state every scenario starts from (e.g. an account with 1,000).
    fn seed(&self, tables: &mut TablesOf<'_, Self>) -> Result<(), StorageError>;
    /// A new business fact (a new payment, a refund with a refund id of its
    /// own...) sent under the message id `id`. `n` numbers the facts of a
    /// scenario from 0, for subjects that vary them (accounts, amounts,
    /// the messages they must refuse). Facts must not depend on each
    /// other's order: rules across messages belong to [`Subject::contended`].
    fn fact(&self, id: MessageId, n: usize) -> Message<EventOf<Self>>;
    /// `message` sent again by its sender under the same id, with other
    /// content (a fresh timestamp, a corrected payload). It is still the
    /// same message: the inbox refuses it, and the handler's own tables must
    /// refuse it too if it ever gets past the inbox.
    fn resend(&self, message: &Message<EventOf<Self>>) -> Message<EventOf<Self>>;
    /// The business fact of `message` sent again under the new message id
    /// `id` (a producer that lost track and published it twice): its
    /// business key (a refund id in the payload) must refuse it, since the
    /// inbox cannot. `None` when the message id is the business key (one
    /// payment is one message): a new id is then a new fact.
    fn repeat(
        &self,
        message: &Message<EventOf<Self>>,
        id: MessageId,
    ) -> Option<Message<EventOf<Self>>>;
    /// Reads the handler's state.
    fn state(&self, tables: &mut TablesOf<'_, Self>) -> Result<Self::State, StorageError>;
    /// The model: what applying each of `messages` (distinct) once, in this
    /// order, must give: the state, and which messages the handler refuses.
    /// Computed by hand, without a database.
    fn model(&self, messages: &[Message<EventOf<Self>>]) -> Model<Self::State>;
    /// A few different facts about one business entity whose outcomes
    /// depend on their order (refunds of one payment that together exceed
    /// it), for the rules-across-messages scenario: delivered at once, they
    /// must end as some serial order of them would. `round` numbers the
    /// rounds: each round's facts are about a new entity. None by default:
    /// a consumer without rules across messages.
    fn contended(&self, _round: usize) -> Vec<Message<EventOf<Self>>> {
        Vec::new()
    }
    /// A fact its handler cannot apply for now and must fail on (a payment
    /// from an account never opened), sent under `id`, for the
    /// cannot-apply scenario. None by default: a handler that fails only
    /// when something else fails.
    fn cannot_apply(&self, _id: MessageId) -> Option<Message<EventOf<Self>>> {
        None
    }
}

/// `count` new facts of `subject`, ids `<prefix>00001` and up.
pub fn facts<S: Subject + ?Sized>(
    subject: &S,
    prefix: &str,
    count: usize,
) -> Vec<Message<EventOf<S>>> {
    (0..count)
        .map(|n| {
            let id = MessageId::new(format!("{prefix}{:05}", n + 1)).expect("a valid id");
            subject.fact(id, n)
        })
        .collect()
}

/// The part of a [`Subject`] that set-up needs, without its state type, so
/// that subjects of different types can share one fixture.
pub trait Seed<P: Project> {
    fn seed_handler(&self) -> Arc<AnyHandlerOf<P>>;
    fn seed_tables(&self, tables: &mut P::Tables<'_>) -> Result<(), StorageError>;
}

impl<S: Subject> Seed<S::Project> for S {
    fn seed_handler(&self) -> Arc<AnyHandlerOf<S::Project>> {
        self.handler()
    }
    fn seed_tables(&self, tables: &mut TablesOf<'_, S>) -> Result<(), StorageError> {
        self.seed(tables)
    }
}
