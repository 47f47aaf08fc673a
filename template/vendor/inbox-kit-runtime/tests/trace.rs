//! The spans that follow a message (`trace`), recorded in memory through
//! the tracing-opentelemetry layer a project installs for
//! `--otlp-endpoint`: each test records on its own thread, with a
//! subscriber of its own.

use inbox_kit_runtime::delivery::Delivery;
use inbox_kit_runtime::handler::{Registry, Subscriber};
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::meter::BatchEnd;
use inbox_kit_runtime::source::{Acknowledge, Incoming, Verdict};
use inbox_kit_runtime::trace;
use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

/// The producer's trace and span, as its `traceparent` names them.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PRODUCER: &str = "00f067aa0ba902b7";

fn producer() -> String {
    format!("00-{TRACE}-{PRODUCER}-01")
}

/// What `body` returns, and the spans it ended, recorded as a project
/// records them.
fn recorded<T>(body: impl FnOnce() -> T) -> (T, Vec<SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("tests"));
    let subscriber = tracing_subscriber::registry().with(layer);
    let returned = tracing::subscriber::with_default(subscriber, body);
    (returned, exporter.get_finished_spans().expect("the spans"))
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.as_str().into_owned())
}

/// The `traceparent` that names `span`.
fn traceparent_of(span: &SpanData) -> String {
    format!(
        "00-{}-{}-01",
        span.span_context.trace_id(),
        span.span_context.span_id()
    )
}

struct Unsettled;

impl Acknowledge for Unsettled {
    fn settle(self: Box<Self>, _: Verdict) {}
}

fn incoming(trace_parent: Option<String>) -> Incoming<u64> {
    Incoming {
        message: Message {
            id: MessageId::new("m-1").expect("a valid id"),
            event: 7,
            trace_parent,
        },
        delivered: 2,
        ack: Box::new(Unsettled),
    }
}

#[test]
fn a_receive_span_is_the_producers_child_and_its_context_is_passed_on() {
    let mut incoming = incoming(Some(producer()));
    let (passed_on, spans) = recorded(|| {
        drop(trace::receive(&mut incoming));
        incoming.message.trace_parent.clone()
    });
    let [receive] = spans.as_slice() else {
        panic!("one span, not {spans:?}");
    };
    assert_eq!(receive.name, "receive");
    assert_eq!(
        receive.span_context.trace_id(),
        TraceId::from_hex(TRACE).unwrap()
    );
    assert_eq!(receive.parent_span_id, SpanId::from_hex(PRODUCER).unwrap());
    assert_eq!(attribute(receive, "message_id").as_deref(), Some("m-1"));
    assert_eq!(attribute(receive, "delivered").as_deref(), Some("2"));
    assert_eq!(passed_on, Some(traceparent_of(receive)));
}

#[test]
fn a_malformed_traceparent_starts_a_trace_of_its_own() {
    let mut incoming = incoming(Some("00-not-a-trace-01".into()));
    let (passed_on, spans) = recorded(|| {
        drop(trace::receive(&mut incoming));
        incoming.message.trace_parent.clone()
    });
    let [receive] = spans.as_slice() else {
        panic!("one span, not {spans:?}");
    };
    assert_eq!(receive.parent_span_id, SpanId::INVALID);
    assert!(receive.span_context.is_valid());
    assert_eq!(passed_on, Some(traceparent_of(receive)));
}

#[test]
fn without_a_recorder_the_context_received_is_passed_on_unchanged() {
    let mut incoming = incoming(Some(producer()));
    drop(trace::receive(&mut incoming));
    assert_eq!(incoming.message.trace_parent, Some(producer()));

    let mut none = self::incoming(None);
    drop(trace::receive(&mut none));
    assert_eq!(none.message.trace_parent, None);

    let mut sent = Some(producer());
    drop(trace::relay(&mut sent, "debit"));
    assert_eq!(sent, Some(producer()));
}

/// Events that are their own partition key, with one consumer.
struct Keys;

impl Registry for Keys {
    type Event = u64;
    type Handler<'a> = dyn Subscriber<u64> + 'a;
    fn has_set_based(_: &Self::Handler<'_>) -> bool {
        false
    }
    fn encode(key: &u64) -> (&'static str, String) {
        ("Key", key.to_string())
    }
    fn partition_key(key: &u64) -> u64 {
        *key
    }
    fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a> {
        handler
    }
}

struct Named(&'static str);

impl Subscriber<u64> for Named {
    fn consumer(&self) -> &'static str {
        self.0
    }
    fn subscribes_to(&self, _: &u64) -> bool {
        true
    }
}

/// The `deliver` spans of one message to two consumers whose batch ended
/// `how`, with the `receive` span they are children of.
fn delivered(how: BatchEnd<'_>) -> (SpanData, Vec<SpanData>) {
    let mut incoming = incoming(Some(producer()));
    let (debit, notify) = (Named("debit"), Named("notify"));
    let ((), spans) = recorded(|| {
        let receive = trace::receive(&mut incoming);
        let deliveries = [
            Delivery::<Keys>::new(&debit, &incoming.message),
            Delivery::<Keys>::new(&notify, &incoming.message),
        ];
        let delivering: Vec<_> = deliveries
            .iter()
            .map(|delivery| trace::deliver(&receive, delivery))
            .collect();
        trace::ended(&delivering, how);
    });
    let (receive, delivering): (Vec<SpanData>, Vec<SpanData>) =
        spans.into_iter().partition(|span| span.name == "receive");
    let [receive] = <[SpanData; 1]>::try_from(receive).expect("one receive span");
    (receive, delivering)
}

fn consumers_and_outcomes(spans: &[SpanData]) -> Vec<(String, String)> {
    let mut pairs: Vec<_> = spans
        .iter()
        .map(|span| {
            (
                attribute(span, "consumer").unwrap_or_default(),
                attribute(span, "outcome").unwrap_or_default(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

#[test]
fn each_delivery_has_a_span_under_its_receive_with_its_outcome() {
    let outcomes = [Outcome::Applied, Outcome::Failed("down".into())];
    let (receive, delivering) = delivered(BatchEnd::Committed(&outcomes));
    assert_eq!(delivering.len(), 2, "{delivering:?}");
    for span in &delivering {
        assert_eq!(span.name, "deliver");
        assert_eq!(span.parent_span_id, receive.span_context.span_id());
        assert_eq!(attribute(span, "message_id").as_deref(), Some("m-1"));
    }
    assert_eq!(
        consumers_and_outcomes(&delivering),
        [
            ("debit".to_owned(), "applied".to_owned()),
            ("notify".to_owned(), "failed".to_owned())
        ]
    );
}

#[test]
fn a_rolled_back_batch_fails_every_delivery_span() {
    let (_, delivering) = delivered(BatchEnd::RolledBack);
    assert_eq!(
        consumers_and_outcomes(&delivering),
        [
            ("debit".to_owned(), "failed".to_owned()),
            ("notify".to_owned(), "failed".to_owned())
        ]
    );
}

#[test]
fn a_relay_span_follows_the_stored_context_and_sends_its_own() {
    let mut trace_parent = Some(producer());
    let (sent, spans) = recorded(|| {
        drop(trace::relay(&mut trace_parent, "debit"));
        trace_parent.clone()
    });
    let [relay] = spans.as_slice() else {
        panic!("one span, not {spans:?}");
    };
    assert_eq!(relay.name, "relay");
    assert_eq!(relay.parent_span_id, SpanId::from_hex(PRODUCER).unwrap());
    assert_eq!(attribute(relay, "key").as_deref(), Some("debit"));
    assert_eq!(sent, Some(traceparent_of(relay)));
}
