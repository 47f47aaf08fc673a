//! `notify`: fans each captured payment out into one notification per
//! channel.
//!
//! The notifications table is an outbox: a separate sender delivers its
//! rows by mail and push and can retry without this consumer ever calling
//! out of its transaction. The table keeps its own key, event x channel, as
//! a second line of defence behind the inbox. The key must include the
//! channel: one event legitimately produces an email *and* a push, and a key
//! on the event alone would reject the second. It must not include more
//! (the account, the text): a repeat of the event is the same notification
//! even if its payload changed.

use inbox_kit_runtime::storage::StorageError;

use crate::event::{Event, NotSubscribed};
use crate::handler::{Handler, HandlerError, SetBased, Subscriber};
use crate::message::Message;

/// Every channel a payment is announced on.
pub const CHANNELS: [&str; 2] = ["email", "push"];

/// The `notify` consumer.
pub struct Notify;

/// One row of the notifications outbox.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Notification {
    pub event_id: String,
    pub channel: String,
    pub account: i64,
    pub body: String,
    /// The trace context of the delivery that queued it, which the relay
    /// sends on (see `crate::trace`).
    pub trace_parent: Option<String>,
}

/// The notifications outbox.
pub trait Outbox {
    /// Adds a notification to send (unique by event and channel).
    fn queue_notification(&mut self, notification: &Notification) -> Result<(), StorageError>;

    /// Adds every notification, in as few statements as the database
    /// allows; one already there is a constraint error, as in
    /// [`Outbox::queue_notification`], and nothing is added.
    fn queue_all(&mut self, notifications: &[Notification]) -> Result<(), StorageError>;

    /// Every notification, by event and channel.
    fn notifications(&mut self) -> Result<Vec<Notification>, StorageError>;
}

impl Subscriber<Event> for Notify {
    fn consumer(&self) -> &'static str {
        "notify"
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        matches!(event, Event::PaymentCaptured(_))
    }
}

impl<T: Outbox + ?Sized> Handler<Event, T> for Notify {
    fn apply(&self, tables: &mut T, message: &Message) -> Result<(), HandlerError> {
        for notification in notifications_of(message)? {
            tables.queue_notification(&notification)?;
        }
        Ok(())
    }

    fn set_based(&self) -> Option<&dyn SetBased<Event, T>> {
        Some(self)
    }
}

/// A run's notifications in one statement (on PostgreSQL).
impl<T: Outbox + ?Sized> SetBased<Event, T> for Notify {
    fn apply_all(&self, tables: &mut T, messages: &[&Message]) -> Result<(), HandlerError> {
        let mut notifications = Vec::with_capacity(messages.len() * CHANNELS.len());
        for message in messages {
            notifications.extend(notifications_of(message)?);
        }
        tables.queue_all(&notifications)?;
        Ok(())
    }
}

/// The notifications a `payment.captured` message asks for, one per
/// channel.
fn notifications_of(message: &Message) -> Result<Vec<Notification>, NotSubscribed> {
    let payment = message
        .event
        .payment_captured()
        .ok_or_else(|| NotSubscribed::from(&message.event))?;
    Ok(CHANNELS
        .iter()
        .map(|channel| Notification {
            event_id: message.id.as_str().to_owned(),
            channel: (*channel).to_owned(),
            account: payment.account,
            body: format!("Payment of {} captured", payment.amount),
            trace_parent: message.trace_parent.clone(),
        })
        .collect())
}
