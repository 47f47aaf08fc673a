//! Any project's handler wrapped to do the wrong thing: the mistakes that
//! need nothing of what the handler does. A project's own broken handlers
//! (the wrong amount, a rule kept in memory) stay in the project.

use std::sync::Arc;

use inbox_kit_runtime::handler::{Handler, HandlerError, Subscriber};
use inbox_kit_runtime::message::Message;

use crate::harness::{AnyHandlerOf, Project};

/// A handler that does nothing and succeeds. Every duplicate test passes
/// ("nothing happened twice"); caught by the model, which says what should
/// have happened once.
pub struct DoesNothing<P: Project>(pub Arc<AnyHandlerOf<P>>);

/// A handler whose refusals are plain errors: the inbox cannot tell them
/// from a failure that may heal, so a message that can never apply is
/// retried until it is dead-lettered, instead of being refused at once.
/// (The same as an inbox that never looks for a refusal.) Caught by the
/// model, which says which messages are refused.
pub struct ForgetsRefusals<P: Project>(pub Arc<AnyHandlerOf<P>>);

/// A consumer under another consumer's name: the two share their inbox
/// rows. Caught by the registry's check of names.
pub struct Renamed<P: Project> {
    pub name: &'static str,
    pub handler: Arc<AnyHandlerOf<P>>,
}

impl<P: Project> Subscriber<P::Event> for DoesNothing<P> {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }
    fn subscribes_to(&self, event: &P::Event) -> bool {
        self.0.subscribes_to(event)
    }
}

impl<P: Project> Subscriber<P::Event> for ForgetsRefusals<P> {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }
    fn subscribes_to(&self, event: &P::Event) -> bool {
        self.0.subscribes_to(event)
    }
}

impl<P: Project> Subscriber<P::Event> for Renamed<P> {
    fn consumer(&self) -> &'static str {
        self.name
    }
    fn subscribes_to(&self, event: &P::Event) -> bool {
        self.handler.subscribes_to(event)
    }
}

impl<'t, P: Project> Handler<P::Event, P::Tables<'t>> for DoesNothing<P> {
    fn apply(
        &self,
        _tables: &mut P::Tables<'t>,
        _message: &Message<P::Event>,
    ) -> Result<(), HandlerError> {
        Ok(())
    }
}

impl<'t, P: Project> Handler<P::Event, P::Tables<'t>> for ForgetsRefusals<P> {
    fn apply(
        &self,
        tables: &mut P::Tables<'t>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError> {
        self.0
            .apply(tables, message)
            .map_err(|error| error.to_string().into())
    }
}

impl<'t, P: Project> Handler<P::Event, P::Tables<'t>> for Renamed<P> {
    fn apply(
        &self,
        tables: &mut P::Tables<'t>,
        message: &Message<P::Event>,
    ) -> Result<(), HandlerError> {
        self.handler.apply(tables, message)
    }
}
