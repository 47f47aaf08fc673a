//! The relay of this service's outbox: `notify`'s notifications, sent by
//! the runtime's relay (`inbox_kit_runtime::relay`: at least once, marked
//! sent only after a confirmed send, failures retried and then parked).
//!
//! What is this service's own is here: how a notification goes out (its
//! envelope type, its payload, the channel it is published under) and the
//! key its receiver deduplicates on. The names below keep the paths the
//! commands and the tests use; the queue the rows are taken from is the
//! runtime's, over the outbox table of the database module.

{% if broker == "kafka" -%}
pub use inbox_kit_runtime::relay::kafka;
{% elsif broker == "nats" -%}
pub use inbox_kit_runtime::relay::nats;
{% endif -%}
pub use inbox_kit_runtime::relay::{
    Notice, PROGRESS_LINE, Parked, Queue, RelayCounts, RelayError, RelayPolicy, Sent, Sink, Until,
    lines, relay, relay_batch,
};

use crate::handlers::{Handlers, Notification};

/// A notification taken from the outbox to send.
pub type Outgoing = inbox_kit_runtime::relay::Outgoing<Notification>;

/// How a relay of this service runs besides what it sends.
pub type Watch<'a> = inbox_kit_runtime::relay::Watch<'a, Handlers>;

impl Notice for Notification {
    const TYPE: &'static str = "notification.requested";

    /// `channel:event id`: the same for every send of a row, different for
    /// every row (channel names have no colon).
    fn idempotency_key(&self) -> String {
        format!("{}:{}", self.channel, self.event_id)
    }

    fn topic(&self) -> &str {
        &self.channel
    }

    fn payload(&self) -> serde_json::Value {
        serde_json::json!({
            "event_id": self.event_id,
            "channel": self.channel,
            "account": self.account,
            "body": self.body,
        })
    }

    fn trace_parent(&self) -> Option<&str> {
        self.trace_parent.as_deref()
    }

    fn trace_parent_mut(&mut self) -> &mut Option<String> {
        &mut self.trace_parent
    }
}
