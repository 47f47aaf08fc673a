//! Handlers that do the wrong thing.

use std::sync::Arc;

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError};
use {{crate_name}}::handlers::{Debit, Tables};
use {{crate_name}}::message::Message;

/// A handler that does nothing and succeeds. Every duplicate test passes
/// ("nothing happened twice"); caught by the model, which says what should
/// have happened once.
pub struct DoesNothing(pub Arc<dyn Handler>);

impl Handler for DoesNothing {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        self.0.subscribes_to(event)
    }
    fn apply(&self, _tables: &mut dyn Tables, _message: &Message) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// `debit` taking one unit too much from every payment, consistently: the
/// once-only oracle agrees with it (it runs the same handler); caught by
/// the model.
pub struct DebitsTooMuch;

impl Handler for DebitsTooMuch {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
        let mut payment = message.event.payment_captured().expect("a payment").clone();
        payment.amount += 1;
        let message = Message {
            id: message.id.clone(),
            event: Event::PaymentCaptured(payment),
        };
        Debit.apply(tables, &message)
    }
}
