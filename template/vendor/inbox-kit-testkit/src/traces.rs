//! Following a trace from its producer to the relay's receiver: spans
//! recorded in memory, through the same tracing-opentelemetry layer that
//! `--otlp-endpoint` installs, and the one check the trace tests make of
//! them, whatever the source.
//!
//! The recorder is the test binary's global subscriber, installed by the
//! first test that asks for it; tests running beside it are recorded too,
//! and each test reads only the spans of its own trace.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

/// The spans every test of this binary ended, and what records them.
struct Recorder {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
}

static RECORDER: OnceLock<Recorder> = OnceLock::new();

/// Starts recording spans (once per test binary).
pub fn record_spans() {
    RECORDER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("tests"));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .expect("no other global subscriber in this test binary");
        Recorder {
            exporter,
            _provider: provider,
        }
    });
}

/// Every recorded span of `trace`.
pub fn spans_of(trace: TraceId) -> Vec<SpanData> {
    let recorder = RECORDER.get().expect("record_spans() first");
    recorder
        .exporter
        .get_finished_spans()
        .expect("the recorded spans")
        .into_iter()
        .filter(|span| span.span_context.trace_id() == trace)
        .collect()
}

/// A producer's span, as a message carries it: a trace of its own.
#[derive(Clone, Copy, Debug)]
pub struct Producer {
    pub trace: TraceId,
    pub span: SpanId,
}

static PRODUCERS: AtomicU64 = AtomicU64::new(1);

/// A new trace: every producer is another one.
impl Default for Producer {
    fn default() -> Self {
        Self::new()
    }
}

impl Producer {
    /// A new trace, unlike any other of this or another test run.
    pub fn new() -> Self {
        let n = PRODUCERS.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as u64;
        let high = u64::from(std::process::id()) << 32 | (now & 0xffff_ffff);
        Self {
            trace: TraceId::from_bytes(((u128::from(high) << 64) | u128::from(n)).to_be_bytes()),
            span: SpanId::from_bytes((now ^ n.rotate_left(17) | 1).to_be_bytes()),
        }
    }

    /// Its W3C `traceparent` header value (sampled).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-01", self.trace, self.span)
    }
}

/// The trace id and parent span id a `traceparent` value names.
pub fn parse_traceparent(value: &str) -> Option<(TraceId, SpanId)> {
    let mut parts = value.split('-');
    let (_version, trace, span) = (parts.next()?, parts.next()?, parts.next()?);
    Some((TraceId::from_hex(trace).ok()?, SpanId::from_hex(span).ok()?))
}

/// The value of `span`'s attribute `key`, as text.
pub fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key.as_str() == key)
        .map(|attribute| attribute.value.as_str().into_owned())
}

/// What is wrong with how `producer`'s trace went through this consumer,
/// if anything: one `receive` span of `message_id`, a child of the
/// producer's span; one `deliver` span per consumer of `outcomes` (consumer
/// and outcome), children of `receive`; and for each notification the
/// relay sent (the `traceparent` it sent it with, in `relayed`), a `relay`
/// span that is a child of `receive`, whose context is the one sent.
pub fn problems(
    producer: Producer,
    message_id: &str,
    outcomes: &[(&str, &str)],
    relayed: &[String],
) -> Vec<String> {
    let spans = spans_of(producer.trace);
    let named =
        |name: &str| -> Vec<&SpanData> { spans.iter().filter(|span| span.name == name).collect() };
    let mut problems = Vec::new();
    let received = named("receive");
    let [receive] = received.as_slice() else {
        return vec![format!(
            "{} receive spans in the trace, not 1 (spans: {:?})",
            received.len(),
            spans.iter().map(|span| &span.name).collect::<Vec<_>>()
        )];
    };
    if receive.parent_span_id != producer.span {
        problems.push(format!(
            "receive is a child of {}, not of the producer's span {}",
            receive.parent_span_id, producer.span
        ));
    }
    if attribute(receive, "message_id").as_deref() != Some(message_id) {
        problems.push(format!("receive is not of {message_id}: {receive:?}"));
    }
    let receive_id = receive.span_context.span_id();
    let mut delivered: Vec<(String, String)> = named("deliver")
        .into_iter()
        .map(|span| {
            if span.parent_span_id != receive_id {
                problems.push(format!("a deliver span outside receive: {span:?}"));
            }
            if attribute(span, "message_id").as_deref() != Some(message_id) {
                problems.push(format!("a deliver span of another message: {span:?}"));
            }
            (
                attribute(span, "consumer").unwrap_or_default(),
                attribute(span, "outcome").unwrap_or_default(),
            )
        })
        .collect();
    delivered.sort();
    let mut expected: Vec<(String, String)> = outcomes
        .iter()
        .map(|(consumer, outcome)| ((*consumer).to_owned(), (*outcome).to_owned()))
        .collect();
    expected.sort();
    if delivered != expected {
        problems.push(format!(
            "deliver spans (consumer, outcome) {delivered:?}, expected {expected:?}"
        ));
    }
    let relays = named("relay");
    if relays.len() != relayed.len() {
        problems.push(format!(
            "{} relay spans for {} notifications sent in the trace",
            relays.len(),
            relayed.len()
        ));
    }
    for sent in relayed {
        let Some((trace, parent)) = parse_traceparent(sent) else {
            problems.push(format!("sent with a malformed traceparent {sent:?}"));
            continue;
        };
        if trace != producer.trace {
            problems.push(format!("sent in another trace: {sent}"));
        }
        match relays
            .iter()
            .find(|relay| relay.span_context.span_id() == parent)
        {
            Some(relay) if relay.parent_span_id == receive_id => {}
            Some(relay) => problems.push(format!("a relay span outside receive: {relay:?}")),
            None => problems.push(format!("sent as a child of no relay span: {sent}")),
        }
    }
    problems
}
