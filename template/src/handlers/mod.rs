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

use crate::handler::Handler;

/// Everything handlers may do inside a delivery's transaction: one trait
/// per handler's tables. A new handler adds its trait here.
pub trait Tables: Ledger + Outbox + Refunds {}

impl<T: Ledger + Outbox + Refunds + ?Sized> Tables for T {}

/// Every consumer this service knows, in a fixed order.
pub fn all() -> Vec<Arc<dyn Handler>> {
    vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Refund)]
}

/// Picks consumers by name; an empty list means all of them.
pub fn select(names: &[String]) -> Result<Vec<Arc<dyn Handler>>, UnknownConsumer> {
    let all = all();
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|name| {
            all.iter()
                .find(|handler| handler.consumer() == name)
                .cloned()
                .ok_or_else(|| UnknownConsumer {
                    name: name.clone(),
                    known: all
                        .iter()
                        .map(|h| h.consumer())
                        .collect::<Vec<_>>()
                        .join(", "),
                })
        })
        .collect()
}

/// A consumer name that no handler has.
#[derive(Debug, thiserror::Error)]
#[error("unknown consumer `{name}` (known: {known})")]
pub struct UnknownConsumer {
    name: String,
    known: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::is_valid_consumer_name;

    #[test]
    fn consumer_names_are_valid_and_distinct() {
        let names: Vec<_> = all().iter().map(|h| h.consumer()).collect();
        assert!(names.iter().all(|name| is_valid_consumer_name(name)));
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn select_by_name() {
        let picked = select(&["notify".to_owned()]).unwrap();
        assert_eq!(picked[0].consumer(), "notify");
        assert!(select(&["nope".to_owned()]).is_err());
        assert_eq!(select(&[]).unwrap().len(), all().len());
    }
}
