//! The contract between the inbox and business code, as the runtime
//! defines it: a [`Handler`] is one *consumer*, with a name (the first half
//! of the inbox key), the events it subscribes to, and `apply`, which the
//! inbox calls inside the delivery's transaction right after recording the
//! message id. So a handler never deals with duplicates, transactions or
//! retries itself: it does its update and returns an error if it cannot.
//!
//! A handler never sees the database itself, only the trait of its own
//! tables, which each database module implements with its own SQL: it is
//! generic over the tables it is handed and bounds them by that trait
//! (`impl<T: Ledger + ?Sized> Handler<Event, T> for Debit`). So it cannot
//! touch another consumer's tables, and it is the same whatever the
//! database.

pub use inbox_kit_runtime::handler::{
    Handler, HandlerError, Refused, SetBased, Subscriber, is_valid_consumer_name,
};
