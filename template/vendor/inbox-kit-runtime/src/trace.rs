//! Traces that follow a message: from its producer, through this
//! consumer's inbox, to the notification the relay sends for it.
//!
//! The link between processes is a W3C trace context (`traceparent`),
//! carried in message headers where the source has them (NATS), kept with
//! the message ([`crate::message::Message::trace_parent`]) and with each
//! notification in a project's outbox, and written on what its relay
//! sends. In
//! this process the spans are `tracing` spans:
//!
//! * `receive`: one per message a worker takes, a child of the producer's
//!   span; the notifications the message causes carry its context;
//! * `deliver`: one per delivery (a message to one consumer), a child of
//!   `receive`, with the consumer, the message id and the outcome;
//! * `relay`: one per notification sent, a child of the context stored
//!   with it; the receiver gets the `relay` span's own.
//!
//! They become OpenTelemetry spans only where a layer turns them into ones
//! (`main` with `--otlp-endpoint`, the tests with an in-memory exporter).
//! Without it they are disabled callsites, and a context received is
//! passed on unchanged, so the trace still reaches the receiver.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::delivery::Delivery;
use crate::handler::{Registry, Subscriber};
use crate::inbox::{FAILED_INDEX, Outcome};
use crate::message::TRACEPARENT;
use crate::meter::BatchEnd;
use crate::source::Incoming;

/// The target of every span made here: what a subscriber's filter names
/// to record them (`Targets::new().with_target(trace::TARGET, Level::INFO)`).
pub const TARGET: &str = module_path!();

/// Makes `span` a child of the remote span that `traceparent` names; a
/// missing or malformed one leaves it a root.
pub fn follow(span: &Span, traceparent: Option<&str>) {
    let Some(traceparent) = traceparent else {
        return;
    };
    if span.is_disabled() {
        return;
    }
    let carrier = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    if context.span().span_context().is_valid() {
        // Fails only for a span that has already started children: these
        // spans are given their parent as soon as they are made.
        let _ = span.set_parent(context);
    }
}

/// `span`'s context as a `traceparent` value, if it has one (it has none
/// when no layer records spans).
pub fn traceparent_of(span: &Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// What to pass on from `span`: its own context if it has one, otherwise
/// the one it received (`received`), unchanged.
pub fn pass_on(span: &Span, received: Option<String>) -> Option<String> {
    traceparent_of(span).or(received)
}

/// A worker took `incoming`: its `receive` span, a child of the producer's
/// span, whose context the message now carries on (to the notifications
/// it causes).
pub fn receive<E>(incoming: &mut Incoming<E>) -> Span {
    let message = &mut incoming.message;
    let span = tracing::info_span!(
        "receive",
        message_id = message.id.as_str(),
        delivered = incoming.delivered
    );
    follow(&span, message.trace_parent.as_deref());
    message.trace_parent = pass_on(&span, message.trace_parent.take());
    span
}

/// The `deliver` span of `delivery`, a child of its message's `receive`
/// span; its outcome is recorded when the batch ends ([`ended`]).
pub fn deliver<R: Registry>(receive: &Span, delivery: &Delivery<'_, R>) -> Span {
    tracing::info_span!(
        parent: receive,
        "deliver",
        consumer = delivery.handler.consumer(),
        message_id = delivery.message.id.as_str(),
        outcome = tracing::field::Empty
    )
}

/// Records on each `deliver` span the outcome of its delivery, once the
/// batch ended `how` (a rolled-back batch failed every one).
pub fn ended(delivering: &[Span], how: BatchEnd<'_>) {
    for (at, span) in delivering.iter().enumerate() {
        let outcome = match how {
            BatchEnd::Committed(outcomes) => outcomes[at].label(),
            BatchEnd::RolledBack => Outcome::LABELS[FAILED_INDEX],
        };
        span.record("outcome", outcome);
    }
}

/// The `relay` span of one notification's send, a child of the context
/// stored with it (`trace_parent`), which then holds the span's own (what
/// the receiver gets). Its outcome is recorded by the caller.
pub fn relay(trace_parent: &mut Option<String>, key: &str) -> Span {
    let span = tracing::info_span!("relay", key, outcome = tracing::field::Empty);
    follow(&span, trace_parent.as_deref());
    *trace_parent = pass_on(&span, trace_parent.take());
    span
}
