//! The consumers this service runs, and the registry that routes events to
//! them.
//!
//! Two example consumers subscribe to the same event and so receive the
//! same message ids: `debit` keeps balances, `notify` writes one
//! notification per channel. Their inbox rows do not collide because the
//! inbox key includes the consumer name. A third, `refund`, credits
//! refunds back: it keeps a business id of its own (the refund id), a rule
//! across messages (never more than was paid) and refuses what can never
//! apply.
//!
//! Each handler declares the operations it needs on its own tables as a
//! trait ([`Ledger`], [`Outbox`], [`Refunds`]); [`Tables`] gathers them,
//! and the database module implements each one with its SQL.

mod debit;
mod notify;
mod refund;

use std::sync::Arc;

pub use debit::{Debit, Debited, Ledger, UnknownAccount};
pub use notify::{CHANNELS, Notification, Notify, Outbox};
pub use refund::{Refund, Refundable, Refunded, Refunds};

use crate::handler::{Handler, is_valid_consumer_name};

/// Everything handlers may do inside a delivery's transaction: one trait
/// per handler's tables. A new handler adds its trait here.
pub trait Tables: Ledger + Outbox + Refunds {}

impl<T: Ledger + Outbox + Refunds + ?Sized> Tables for T {}

/// Every consumer this service knows, in a fixed order.
pub fn all() -> Vec<Arc<dyn Handler>> {
    vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Refund)]
}

/// Whether `handlers` can run side by side: every consumer name valid
/// and distinct. Two consumers with one name would share their inbox rows:
/// the second would take every message the first applied for a duplicate,
/// and never apply it.
pub fn check(handlers: &[Arc<dyn Handler>]) -> Result<(), BadConsumers> {
    let mut seen = std::collections::BTreeSet::new();
    for handler in handlers {
        let name = handler.consumer();
        if !is_valid_consumer_name(name) {
            return Err(BadConsumers::InvalidName(name.to_owned()));
        }
        if !seen.insert(name) {
            return Err(BadConsumers::SameName(name.to_owned()));
        }
    }
    Ok(())
}

/// Why a set of consumers cannot run together.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadConsumers {
    #[error(
        "two consumers are named `{0}`: they would share their inbox rows, and the second would never apply what the first did"
    )]
    SameName(String),
    #[error(
        "consumer name `{0}` is not valid (1 to 64 of a-z, 0-9, _, -, ., starting with a letter)"
    )]
    InvalidName(String),
    #[error(transparent)]
    Unknown(#[from] UnknownConsumer),
}

/// Picks consumers by name; an empty list means all of them.
pub fn select(names: &[String]) -> Result<Vec<Arc<dyn Handler>>, BadConsumers> {
    let all = all();
    check(&all)?;
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|name| {
            all.iter()
                .find(|handler| handler.consumer() == name)
                .cloned()
                .ok_or_else(|| {
                    BadConsumers::from(UnknownConsumer {
                        name: name.clone(),
                        known: all
                            .iter()
                            .map(|h| h.consumer())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
                })
        })
        .collect()
}

/// A consumer name that no handler has.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown consumer `{name}` (known: {known})")]
pub struct UnknownConsumer {
    name: String,
    known: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_consumers_with_one_name_cannot_run_together() {
        let twice: Vec<Arc<dyn Handler>> = vec![Arc::new(Debit), Arc::new(Debit)];
        assert_eq!(check(&twice), Err(BadConsumers::SameName("debit".into())));
    }

    #[test]
    fn select_by_name() {
        let picked = select(&["notify".to_owned()]).unwrap();
        assert_eq!(picked[0].consumer(), "notify");
        assert!(select(&["nope".to_owned()]).is_err());
        assert_eq!(select(&[]).unwrap().len(), all().len());
    }
}
