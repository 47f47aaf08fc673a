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

use crate::event::Event;
use crate::handlers::Tables;
use crate::message::Message;

/// Any error a handler wants to report. Returning one rolls the whole
/// delivery back, inbox record included, so a redelivery tries again
/// (up to the policy's attempts), unless it is a [`Refused`].
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A handler's final "no": the message breaks a rule (a refund above what
/// was paid) or names something that does not exist and never will (a
/// refund of a payment never captured). It would fail the same way on
/// every delivery, so it is not retried: its writes are rolled back, it is
/// dead-lettered at once with this reason, and its redeliveries are
/// duplicates. Return it as `Err(Refused::because("...").into())`.
///
/// A failure that may heal (an account not opened yet, a service that is
/// down) is an ordinary error instead: retried, then dead-lettered. A
/// database fault (a lock timeout, a lost connection) is neither: it is
/// never held against the message (see [`crate::inbox::StorageError`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Refused {
    pub fn because(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

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

/// Consumer names: 1 to 64 characters from `a-z`, `0-9`, `_`, `-`, `.`,
/// starting with a letter. They end up in logs and in the inbox key, so
/// they are kept boring.
pub fn is_valid_consumer_name(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    starts_with_letter
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_names_are_boring() {
        for good in ["debit", "notify", "ledger-v2", "a.b_c"] {
            assert!(is_valid_consumer_name(good), "{good}");
        }
        let too_long = "a".repeat(65);
        for bad in [
            "",
            "Debit",
            "9lives",
            "has space",
            "semi;colon",
            too_long.as_str(),
        ] {
            assert!(!is_valid_consumer_name(bad), "{bad}");
        }
    }
}
