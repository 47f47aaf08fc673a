//! Injected failures: handlers wrapped to fail on purpose, each *after*
//! the real handler did its writes unless it says otherwise, the harshest
//! moment, since a correct inbox must then roll back both the writes and
//! its own record.
//!
//! Each wrapper is a [`Handler`] of whatever events and tables the
//! handler it wraps handles, its set-based path included when it has one.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use inbox_kit_runtime::handler::{Handler, HandlerError, SetBased, Subscriber};
use inbox_kit_runtime::message::Message;

/// Wraps a handler so that the first attempt at each chosen message fails
/// after the real handler has done its writes.
pub struct FailFirstAttempt<H: ?Sized> {
    inner: Arc<H>,
    not_yet_failed: Mutex<HashSet<String>>,
}

impl<H: ?Sized> FailFirstAttempt<H> {
    pub fn new(inner: Arc<H>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            not_yet_failed: Mutex::new(ids),
        }
    }
}

/// Wraps a handler so that every attempt fails after the real handler has
/// done its writes (generated schedules decide which deliveries use it).
pub struct AlwaysFail<H: ?Sized>(pub Arc<H>);

/// Wraps a handler so that every attempt at the chosen messages fails
/// after the real handler has done its writes (a poison message), or,
/// made with [`FailFor::before`], before it runs at all.
pub struct FailFor<H: ?Sized> {
    inner: Arc<H>,
    ids: HashSet<String>,
    before: bool,
}

impl<H: ?Sized> FailFor<H> {
    pub fn new(inner: Arc<H>, ids: HashSet<String>) -> Self {
        Self {
            inner,
            ids,
            before: false,
        }
    }

    /// Fails the chosen messages before the real handler runs: a failure
    /// that comes before any rule of its (a service it calls timed out).
    pub fn before(inner: Arc<H>, ids: HashSet<String>) -> Self {
        Self {
            before: true,
            ..Self::new(inner, ids)
        }
    }
}

/// The wrapped handler's name and subscriptions, for each wrapper.
macro_rules! subscribes_as_the_wrapped_handler {
    ($wrapper:ident, $inner:tt) => {
        impl<E, H: Subscriber<E> + ?Sized> Subscriber<E> for $wrapper<H> {
            fn consumer(&self) -> &'static str {
                self.$inner.consumer()
            }

            fn subscribes_to(&self, event: &E) -> bool {
                self.$inner.subscribes_to(event)
            }
        }
    };
}

subscribes_as_the_wrapped_handler!(FailFirstAttempt, inner);
subscribes_as_the_wrapped_handler!(AlwaysFail, 0);
subscribes_as_the_wrapped_handler!(FailFor, inner);

/// The set-based path of `handler`, which has one.
fn apply_all_of<E, T: ?Sized, H: Handler<E, T> + ?Sized>(
    handler: &H,
    tables: &mut T,
    messages: &[&Message<E>],
) -> Result<(), HandlerError> {
    let set_based = handler.set_based().expect("only asked when it has one");
    set_based.apply_all(tables, messages)
}

impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> Handler<E, T> for FailFirstAttempt<H> {
    fn apply(&self, tables: &mut T, message: &Message<E>) -> Result<(), HandlerError> {
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

    fn set_based(&self) -> Option<&dyn SetBased<E, T>> {
        self.inner.set_based().map(|_| self as &dyn SetBased<E, T>)
    }
}

/// A run that holds a chosen message not failed yet fails after its
/// writes; the first attempt that counts is the one made alone.
impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> SetBased<E, T> for FailFirstAttempt<H> {
    fn apply_all(&self, tables: &mut T, messages: &[&Message<E>]) -> Result<(), HandlerError> {
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

impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> Handler<E, T> for AlwaysFail<H> {
    fn apply(&self, tables: &mut T, message: &Message<E>) -> Result<(), HandlerError> {
        self.0.apply(tables, message)?;
        Err(format!(
            "injected failure after the business update of {}",
            message.id
        )
        .into())
    }

    fn set_based(&self) -> Option<&dyn SetBased<E, T>> {
        self.0.set_based().map(|_| self as &dyn SetBased<E, T>)
    }
}

impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> SetBased<E, T> for AlwaysFail<H> {
    fn apply_all(&self, tables: &mut T, messages: &[&Message<E>]) -> Result<(), HandlerError> {
        apply_all_of(self.0.as_ref(), tables, messages)?;
        Err("injected failure after the business updates of a run".into())
    }
}

impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> Handler<E, T> for FailFor<H> {
    fn apply(&self, tables: &mut T, message: &Message<E>) -> Result<(), HandlerError> {
        let chosen = self.ids.contains(message.id.as_str());
        if !(chosen && self.before) {
            self.inner.apply(tables, message)?;
        }
        if chosen {
            return Err(format!("injected: {} always fails", message.id).into());
        }
        Ok(())
    }

    fn set_based(&self) -> Option<&dyn SetBased<E, T>> {
        self.inner.set_based().map(|_| self as &dyn SetBased<E, T>)
    }
}

/// A run that holds a chosen message fails, after its writes or before.
impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> SetBased<E, T> for FailFor<H> {
    fn apply_all(&self, tables: &mut T, messages: &[&Message<E>]) -> Result<(), HandlerError> {
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

#[cfg(test)]
mod tests {
    use inbox_kit_runtime::message::MessageId;

    use super::*;

    /// Writes each message's id to its tables, one at a time or, when made
    /// with a set-based path, all of a run at once.
    struct Writer {
        set_based: bool,
    }

    impl Subscriber<()> for Writer {
        fn consumer(&self) -> &'static str {
            "writer"
        }

        fn subscribes_to(&self, _event: &()) -> bool {
            true
        }
    }

    impl Handler<(), Vec<String>> for Writer {
        fn apply(
            &self,
            tables: &mut Vec<String>,
            message: &Message<()>,
        ) -> Result<(), HandlerError> {
            tables.push(message.id.to_string());
            Ok(())
        }

        fn set_based(&self) -> Option<&dyn SetBased<(), Vec<String>>> {
            self.set_based
                .then_some(self as &dyn SetBased<(), Vec<String>>)
        }
    }

    impl SetBased<(), Vec<String>> for Writer {
        fn apply_all(
            &self,
            tables: &mut Vec<String>,
            messages: &[&Message<()>],
        ) -> Result<(), HandlerError> {
            tables.extend(messages.iter().map(|message| message.id.to_string()));
            Ok(())
        }
    }

    type AnyWriter = dyn Handler<(), Vec<String>>;

    fn writer(set_based: bool) -> Arc<AnyWriter> {
        Arc::new(Writer { set_based })
    }

    fn message(id: &str) -> Message<()> {
        Message {
            id: MessageId::new(id).unwrap(),
            event: (),
            trace_parent: None,
        }
    }

    fn ids(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|id| (*id).to_owned()).collect()
    }

    #[test]
    fn the_first_attempt_at_a_chosen_message_fails_after_its_writes_and_only_the_first() {
        let handler: Arc<AnyWriter> = Arc::new(FailFirstAttempt::new(writer(false), ids(&["a"])));
        let mut tables = Vec::new();
        assert!(handler.apply(&mut tables, &message("a")).is_err());
        assert_eq!(tables, ["a"], "the writes come before the failure");
        handler.apply(&mut tables, &message("a")).unwrap();
        handler.apply(&mut tables, &message("b")).unwrap();
        assert_eq!(tables, ["a", "a", "b"]);
        assert_eq!(handler.consumer(), "writer");
        assert!(
            handler.set_based().is_none(),
            "no set-based path of its own"
        );
    }

    #[test]
    fn a_run_holding_a_chosen_message_fails_until_it_failed_alone() {
        let handler: Arc<AnyWriter> = Arc::new(FailFirstAttempt::new(writer(true), ids(&["b"])));
        let set_based = handler.set_based().expect("the wrapped handler's path");
        let (a, b) = (message("a"), message("b"));
        let mut tables = Vec::new();
        assert!(set_based.apply_all(&mut tables, &[&a, &b]).is_err());
        assert_eq!(tables, ["a", "b"]);
        set_based.apply_all(&mut tables, &[&a]).unwrap();
        assert!(handler.apply(&mut tables, &b).is_err());
        set_based.apply_all(&mut tables, &[&a, &b]).unwrap();
    }

    #[test]
    fn always_fail_fails_every_attempt_after_its_writes() {
        let handler: Arc<AnyWriter> = Arc::new(AlwaysFail(writer(true)));
        let mut tables = Vec::new();
        for _ in 0..2 {
            assert!(handler.apply(&mut tables, &message("a")).is_err());
        }
        let a = message("a");
        let set_based = handler.set_based().expect("the wrapped handler's path");
        assert!(set_based.apply_all(&mut tables, &[&a]).is_err());
        assert_eq!(tables, ["a", "a", "a"]);
    }

    #[test]
    fn fail_for_fails_the_chosen_messages_every_time_after_or_before_their_writes() {
        let after: Arc<AnyWriter> = Arc::new(FailFor::new(writer(true), ids(&["a"])));
        let before: Arc<AnyWriter> = Arc::new(FailFor::before(writer(true), ids(&["a"])));
        let (a, b) = (message("a"), message("b"));
        let mut tables = Vec::new();
        for _ in 0..2 {
            assert!(after.apply(&mut tables, &a).is_err());
        }
        after.apply(&mut tables, &b).unwrap();
        assert_eq!(tables, ["a", "a", "b"]);
        let mut untouched = Vec::new();
        assert!(before.apply(&mut untouched, &a).is_err());
        let set_based = before.set_based().expect("the wrapped handler's path");
        assert!(set_based.apply_all(&mut untouched, &[&b, &a]).is_err());
        assert!(untouched.is_empty(), "{untouched:?}");
        set_based.apply_all(&mut untouched, &[&b]).unwrap();
        let after_run = after.set_based().expect("the wrapped handler's path");
        let mut written = Vec::new();
        assert!(after_run.apply_all(&mut written, &[&b, &a]).is_err());
        assert_eq!(
            written,
            ["b", "a"],
            "the run's writes come before the failure"
        );
        assert_eq!(untouched, ["b"]);
    }
}
