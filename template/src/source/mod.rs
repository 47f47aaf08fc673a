//! Where this project's deliveries come from: a file of lines (`lines`)
//! and the project's broker, each a [`Source`] of its events. All of them,
//! what a source is, and how each message is settled after its transaction
//! (the [`Verdict`]s) are the runtime's (`inbox_kit_runtime::source`, one
//! feature per broker); this module gives them this project's event type.

{% if broker == "kafka" -%}
pub use inbox_kit_runtime::source::kafka;
{% elsif broker == "nats" -%}
pub use inbox_kit_runtime::source::nats;
{% endif -%}
pub use inbox_kit_runtime::source::{
    Acknowledge, BrokerProbe, Source, Stop, Verdict, lines, retry_delay,
};

use crate::event::Event;

/// One message from a source, with the handle that settles it.
pub type Incoming = inbox_kit_runtime::source::Incoming<Event>;
