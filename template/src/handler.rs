//! The contract between the inbox and business code.
//!
//! A handler is one *consumer*: it has a name (the first half of the inbox
//! key), subscribes to some events, and applies each one to its own tables.
//! The inbox calls [`Handler::apply`] inside the delivery's transaction,
//! right after recording the message id, so a handler never deals with
//! duplicates, transactions or retries itself: it just does its update and
//! returns an error if it cannot.
//!
//! A handler never sees the database itself, only [`Tables`]: the
//! operations on its own tables, which each database module implements
//! with its own SQL. That keeps every handler the same whatever the
//! database, and keeps SQL out of business code.

pub use inbox_kit_runtime::handler::{HandlerError, Refused, is_valid_consumer_name};

use crate::event::Event;
use crate::handlers::Tables;
use crate::message::Message;

/// One consumer of events.
pub trait Handler: Send + Sync {
    /// The consumer's name. Two consumers that receive the same message both
    /// apply it, because the inbox key is (consumer, message id). Must match
    /// [`is_valid_consumer_name`] and never change once messages were
    /// processed: renaming a consumer makes every old message look new.
    fn consumer(&self) -> &'static str;

    /// Whether this consumer wants the event at all.
    fn subscribes_to(&self, event: &Event) -> bool;

    /// Applies the message's business effect.
    ///
    /// `tables` works inside the delivery's transaction: everything done
    /// through it commits or rolls back with the inbox row. Do not call
    /// anything that cannot be rolled back (mail, HTTP): write an outbox row
    /// instead, like the `notify` handler. Refuse a message that can never
    /// apply with [`Refused`]; pass a [`crate::inbox::StorageError`] from
    /// `tables` on as it is (`?`), so that a database fault is told apart.
    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError>;

    /// This handler's set-based path, if it has one (see [`SetBased`]).
    /// Without one (the default) the inbox applies its deliveries one at a
    /// time, which is always right.
    fn set_based(&self) -> Option<&dyn SetBased> {
        None
    }
}

/// A handler that can apply many messages in a few statements.
///
/// On a database server every statement is a round trip, so a batch of 256
/// deliveries applied one at a time waits for hundreds of answers in turn;
/// applied together it waits for one or two. The inbox hands
/// [`SetBased::apply_all`] the deliveries of a batch that are new, in their
/// order, under a savepoint of their own. If it returns an error, for
/// whatever reason, the inbox rolls all of it back and applies those
/// deliveries one at a time through [`Handler::apply`], so the one that
/// fails fails alone and its siblings apply once. So `apply_all` need not
/// find out which message was at fault; it must only never report success
/// for a message it did not apply (a payment skipped because its account
/// is missing is an error, not a smaller batch).
pub trait SetBased: Send + Sync {
    /// Applies every message's business effect, as [`Handler::apply`]
    /// would one after another in this order, or returns an error.
    fn apply_all(&self, tables: &mut dyn Tables, messages: &[&Message])
    -> Result<(), HandlerError>;
}
