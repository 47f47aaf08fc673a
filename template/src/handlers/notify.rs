//! `notify`: fans each captured payment out into one notification per
//! channel.
//!
//! The `notifications` table is an outbox: a separate sender delivers its
//! rows by mail and push and can retry without this consumer ever calling
//! out of its transaction. The table carries its own `UNIQUE (event_id,
//! channel)` as a second line of defense behind the inbox. The key must
//! include the channel: one event legitimately produces an email *and* a
//! push, and `UNIQUE (event_id)` alone would reject the second.

use rusqlite::{Connection, params};

use crate::event::Event;
use crate::handler::{Handler, HandlerError};
use crate::message::Message;

/// Every channel a payment is announced on.
pub const CHANNELS: [&str; 2] = ["email", "push"];

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS notifications (
    event_id TEXT    NOT NULL,
    channel  TEXT    NOT NULL,
    account  INTEGER NOT NULL,
    body     TEXT    NOT NULL,
    UNIQUE (event_id, channel)
);";

/// The `notify` consumer.
pub struct Notify;

/// One row of the notifications outbox.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Notification {
    pub event_id: String,
    pub channel: String,
    pub account: i64,
    pub body: String,
}

impl Handler for Notify {
    fn consumer(&self) -> &'static str {
        "notify"
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        matches!(event, Event::PaymentCaptured(_))
    }

    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn apply(&self, db: &Connection, message: &Message) -> Result<(), HandlerError> {
        match &message.event {
            Event::PaymentCaptured(payment) => {
                let body = format!("Payment of {} captured", payment.amount);
                let mut insert = db.prepare_cached(
                    "INSERT INTO notifications (event_id, channel, account, body)
                     VALUES (?1, ?2, ?3, ?4)",
                )?;
                for channel in CHANNELS {
                    insert.execute(params![message.id.as_str(), channel, payment.account, body])?;
                }
                Ok(())
            }
        }
    }
}

/// Every notification, in a stable order.
pub fn notifications(db: &Connection) -> rusqlite::Result<Vec<Notification>> {
    let mut statement = db.prepare(
        "SELECT event_id, channel, account, body FROM notifications
         ORDER BY event_id, channel",
    )?;
    let rows = statement.query_map([], |row| {
        Ok(Notification {
            event_id: row.get(0)?,
            channel: row.get(1)?,
            account: row.get(2)?,
            body: row.get(3)?,
        })
    })?;
    rows.collect()
}
