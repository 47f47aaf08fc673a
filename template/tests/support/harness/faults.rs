//! Injected failures.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, SetBased, Subscriber};
use {{crate_name}}::handlers::{AnyHandler, BorrowedHandler, Tables};
use {{crate_name}}::message::Message;

/// Wraps a handler so that the first attempt at each chosen message fails
/// *after* the real handler has done its writes: the harshest moment, since
/// a correct inbox must now roll back both the writes and its own record.
pub struct FailFirstAttempt {
    inner: Arc<AnyHandler>,
    not_yet_failed: Mutex<HashSet<String>>,
}

impl FailFirstAttempt {
    pub fn new(inner: Arc<AnyHandler>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            not_yet_failed: Mutex::new(ids),
        }
    }
}

impl Subscriber<Event> for FailFirstAttempt {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        self.inner.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for FailFirstAttempt {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        self.inner.apply(tables, message)?;
        if self
            .not_yet_failed
            .lock()
            .unwrap()
            .remove(message.id.as_str())
        {
            return Err(format!(
                "injected failure after the business update of {}",
                message.id
            )
            .into());
        }
        Ok(())
    }
    fn set_based(&self) -> Option<&dyn SetBased<Event, dyn Tables + 't>> {
        self.inner
            .set_based()
            .map(|_| self as &dyn SetBased<Event, dyn Tables + 't>)
    }
}

/// A run that holds a chosen message not failed yet fails after its
/// writes; the first attempt that counts is the one made alone.
impl<'t> SetBased<Event, dyn Tables + 't> for FailFirstAttempt {
    fn apply_all(
        &self,
        tables: &mut (dyn Tables + 't),
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        apply_all_of(self.inner.as_ref(), tables, messages)?;
        let pending = self.not_yet_failed.lock().unwrap();
        match messages.iter().find(|m| pending.contains(m.id.as_str())) {
            Some(message) => {
                Err(format!("injected failure in a run holding {}", message.id).into())
            }
            None => Ok(()),
        }
    }
}

/// The set-based path of `handler`, which has one.
fn apply_all_of(
    handler: &BorrowedHandler<'_>,
    tables: &mut dyn Tables,
    messages: &[&Message],
) -> Result<(), HandlerError> {
    let set_based = handler.set_based().expect("only asked when it has one");
    set_based.apply_all(tables, messages)
}

/// Wraps a handler so that every attempt fails after the real handler has
/// done its writes (generated schedules decide which deliveries use it).
pub struct AlwaysFail(pub Arc<AnyHandler>);

impl Subscriber<Event> for AlwaysFail {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        self.0.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for AlwaysFail {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        self.0.apply(tables, message)?;
        Err(format!(
            "injected failure after the business update of {}",
            message.id
        )
        .into())
    }
    fn set_based(&self) -> Option<&dyn SetBased<Event, dyn Tables + 't>> {
        self.0
            .set_based()
            .map(|_| self as &dyn SetBased<Event, dyn Tables + 't>)
    }
}

impl<'t> SetBased<Event, dyn Tables + 't> for AlwaysFail {
    fn apply_all(
        &self,
        tables: &mut (dyn Tables + 't),
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        apply_all_of(self.0.as_ref(), tables, messages)?;
        Err("injected failure after the business updates of a run".into())
    }
}

/// Wraps a handler so that every attempt at the chosen messages fails
/// after the real handler has done its writes (a poison message), or,
/// made with [`FailFor::before`], before it runs at all.
pub struct FailFor {
    inner: Arc<AnyHandler>,
    ids: HashSet<String>,
    before: bool,
}

impl FailFor {
    pub fn new(inner: Arc<AnyHandler>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            ids,
            before: false,
        }
    }

    /// Fails the chosen messages before the real handler runs: a failure
    /// that comes before any rule of its (a service it calls timed out).
    pub fn before(inner: Arc<AnyHandler>, ids: HashSet<String>) -> Self {
        Self {
            before: true,
            ..Self::new(inner, ids)
        }
    }
}

impl Subscriber<Event> for FailFor {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        self.inner.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for FailFor {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        let chosen = self.ids.contains(message.id.as_str());
        if !(chosen && self.before) {
            self.inner.apply(tables, message)?;
        }
        if chosen {
            return Err(format!("injected: {} always fails", message.id).into());
        }
        Ok(())
    }
    fn set_based(&self) -> Option<&dyn SetBased<Event, dyn Tables + 't>> {
        self.inner
            .set_based()
            .map(|_| self as &dyn SetBased<Event, dyn Tables + 't>)
    }
}

/// A run that holds a chosen message fails, after its writes or before.
impl<'t> SetBased<Event, dyn Tables + 't> for FailFor {
    fn apply_all(
        &self,
        tables: &mut (dyn Tables + 't),
        messages: &[&Message],
    ) -> Result<(), HandlerError> {
        let chosen = messages
            .iter()
            .find(|message| self.ids.contains(message.id.as_str()));
        if !(chosen.is_some() && self.before) {
            apply_all_of(self.inner.as_ref(), tables, messages)?;
        }
        match chosen {
            Some(message) => Err(format!("injected: a run holding {} fails", message.id).into()),
            None => Ok(()),
        }
    }
}
