//! Where this project's deliveries come from: a file of lines (`lines`,
//! the runtime's) and the project's broker, each a [`Source`] of its
//! events. What a source is, and how each message is settled after its
//! transaction (the [`Verdict`]s), is the runtime's
//! (`inbox_kit_runtime::source`).
//!
//! The brokers differ in how they are told. JetStream settles each message
//! on its own (`nats`); Kafka keeps one committed offset per partition, so
//! its source commits the contiguous prefix of settled offsets and retries
//! a failed message itself (`kafka`).
{% if broker == "kafka" %}
pub mod kafka;
{%- endif %}
{%- if broker == "nats" %}
pub mod nats;
{%- endif %}

pub use inbox_kit_runtime::source::{
    Acknowledge, BrokerProbe, Source, Stop, Verdict, lines, retry_delay,
};

use crate::event::Event;

/// One message from a source, with the handle that settles it.
pub type Incoming = inbox_kit_runtime::source::Incoming<Event>;
