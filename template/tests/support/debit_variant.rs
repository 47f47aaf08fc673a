//! The debit consumer with one part swapped: the base of every test
//! handler that differs from debit in one place only (the benchmark's debit
//! without its set-based path, a handler bug, a broken set-based path), so
//! none of them restates debit's name and subscriptions.

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, SetBased, Subscriber};
use {{crate_name}}::handlers::{Debit, Tables};
use {{crate_name}}::message::Message;

/// Debit, applying each message with `apply` and whole batches with
/// `set_based` (none: every delivery is applied alone).
pub struct DebitVariant {
    pub apply: fn(&mut dyn Tables, &Message) -> Result<(), HandlerError>,
    pub set_based: Option<&'static dyn for<'t> SetBased<Event, dyn Tables + 't>>,
}

impl DebitVariant {
    /// Debit without its set-based path, as a handler without one runs.
    pub const ONE_AT_A_TIME: Self = Self {
        apply: debit_one,
        set_based: None,
    };
}

/// Debit's own `apply`.
pub fn debit_one(tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
    Debit.apply(tables, message)
}

impl Subscriber<Event> for DebitVariant {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for DebitVariant {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        (self.apply)(tables, message)
    }
    fn set_based(&self) -> Option<&dyn SetBased<Event, dyn Tables + 't>> {
        self.set_based
    }
}
