//! Injected failures.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError};
use {{crate_name}}::handlers::Tables;
use {{crate_name}}::message::Message;

/// Wraps a handler so that the first attempt at each chosen message fails
/// *after* the real handler has done its writes: the harshest moment, since
/// a correct inbox must now roll back both the writes and its own record.
pub struct FailFirstAttempt {
    inner: Arc<dyn Handler>,
    not_yet_failed: Mutex<HashSet<String>>,
}

impl FailFirstAttempt {
    pub fn new(inner: Arc<dyn Handler>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            not_yet_failed: Mutex::new(ids),
        }
    }
}

impl Handler for FailFirstAttempt {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        self.inner.subscribes_to(event)
    }
    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
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
}

/// Wraps a handler so that every attempt fails after the real handler has
/// done its writes (generated schedules decide which deliveries use it).
pub struct AlwaysFail(pub Arc<dyn Handler>);

impl Handler for AlwaysFail {
    fn consumer(&self) -> &'static str {
        self.0.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        self.0.subscribes_to(event)
    }
    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
        self.0.apply(tables, message)?;
        Err(format!(
            "injected failure after the business update of {}",
            message.id
        )
        .into())
    }
}

/// Wraps a handler so that every attempt at the chosen messages fails
/// after the real handler has done its writes (a poison message), or,
/// made with [`FailFor::before`], before it runs at all.
pub struct FailFor {
    inner: Arc<dyn Handler>,
    ids: HashSet<String>,
    before: bool,
}

impl FailFor {
    pub fn new(inner: Arc<dyn Handler>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            ids,
            before: false,
        }
    }

    /// Fails the chosen messages before the real handler runs: a failure
    /// that comes before any rule of its (a service it calls timed out).
    pub fn before(inner: Arc<dyn Handler>, ids: HashSet<String>) -> Self {
        Self {
            before: true,
            ..Self::new(inner, ids)
        }
    }
}

impl Handler for FailFor {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }
    fn subscribes_to(&self, event: &Event) -> bool {
        self.inner.subscribes_to(event)
    }
    fn apply(&self, tables: &mut dyn Tables, message: &Message) -> Result<(), HandlerError> {
        let chosen = self.ids.contains(message.id.as_str());
        if !(chosen && self.before) {
            self.inner.apply(tables, message)?;
        }
        if chosen {
            return Err(format!("injected: {} always fails", message.id).into());
        }
        Ok(())
    }
}
