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
//! trait ([`Ledger`], [`Outbox`], [`Refunds`]) and is generic over tables
//! that have it; [`Tables`] gathers them, the database module implements
//! each one with its SQL, and [`AnyHandler`] is a handler of this service
//! handed all of them. [`Handlers`] tells the runtime's deliveries and
//! inboxes which object that is.

mod debit;
mod notify;
mod refund;

use std::sync::Arc;

use inbox_kit_runtime::handler::{Registry, check_names, pick};

pub use debit::{Debit, Debited, Ledger, UnknownAccount};
pub use notify::{CHANNELS, Notification, Notify, Outbox};
pub use refund::{Refund, Refundable, Refunded, Refunds};

pub use inbox_kit_runtime::handler::{BadConsumers, UnknownConsumer};

use crate::envelope::Wire;
use crate::event::Event;
use crate::handler::Handler;

/// Everything handlers may do inside a delivery's transaction: one trait
/// per handler's tables. A new handler adds its trait here.
pub trait Tables: Ledger + Outbox + Refunds {}

impl<T: Ledger + Outbox + Refunds + ?Sized> Tables for T {}

/// A consumer of this service, as the inbox runs it: on this service's
/// events, handed every table (though it bounds by its own trait what it
/// may touch), whatever the transaction's lifetime.
pub type AnyHandler = BorrowedHandler<'static>;

/// [`AnyHandler`] that may borrow for `'a`, such as a test's wrapper
/// around a handler it was lent: what one delivery needs.
pub type BorrowedHandler<'a> = dyn for<'t> Handler<Event, dyn Tables + 't> + 'a;

/// This service's handlers as the runtime's deliveries and inboxes know
/// them (`Delivery<'_, Handlers>`, `dyn Inbox<Handlers>`): its events, and
/// [`BorrowedHandler`] as the object a delivery holds.
pub struct Handlers;

impl Registry for Handlers {
    type Event = Event;
    type Handler<'a> = BorrowedHandler<'a>;

    fn has_set_based(handler: &BorrowedHandler<'_>) -> bool {
        handler.set_based().is_some()
    }

    fn encode(event: &Event) -> (&'static str, String) {
        event.encode()
    }

    fn partition_key(event: &Event) -> u64 {
        event.partition_key()
    }

    fn lend<'a>(handler: &'a AnyHandler) -> &'a BorrowedHandler<'a> {
        handler
    }
}

/// Every consumer this service knows, in a fixed order.
pub fn all() -> Vec<Arc<AnyHandler>> {
    vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Refund)]
}

/// Whether `handlers` can run side by side (see [`check_names`]).
pub fn check(handlers: &[Arc<AnyHandler>]) -> Result<(), BadConsumers> {
    check_names(handlers.iter().map(|handler| handler.consumer()))
}

/// Picks consumers by name; an empty list means all of them.
pub fn select(names: &[String]) -> Result<Vec<Arc<AnyHandler>>, BadConsumers> {
    let all = all();
    let known: Vec<&str> = all.iter().map(|handler| handler.consumer()).collect();
    let picked = pick(names, &known)?;
    Ok(picked.into_iter().map(|at| all[at].clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_consumers_with_one_name_cannot_run_together() {
        let twice: Vec<Arc<AnyHandler>> = vec![Arc::new(Debit), Arc::new(Debit)];
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
