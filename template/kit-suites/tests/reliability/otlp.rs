//! `--otlp-endpoint`: a run exports its spans to an OpenTelemetry
//! collector (here a stand-in that keeps what it was sent), the producer's
//! trace among them, all of them before the process exits; the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` does the same.

use std::io::Write;
use std::process::{Command, Stdio};

use {{crate_name}}::envelope::to_line;
use {{crate_name}}::message::Message;

use crate::consumer;
use crate::support::collector::Collector;
use crate::support::database::Fixture;
use crate::support::harness::{RealInbox, fixture_for};
use crate::support::subjects::{DebitSubject, payments};
use crate::support::traces::Producer;

/// Runs the consumer on `fixture` over `input` with `options`; checks
/// that it succeeded.
fn run_with(fixture: &Fixture, options: &[&str], input: &str) {
    let mut command = consumer(fixture);
    command.args(options);
    run_command(command, input);
}

/// Runs `command` (the consumer) as a `run` of `input`; checks that it
/// succeeded.
fn run_command(mut command: Command, input: &str) {
    let mut run = command
        .args(["run", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the consumer");
    run.stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write the input");
    let ended = run.wait_with_output().expect("the run ends");
    assert!(
        ended.status.success(),
        "{}",
        String::from_utf8_lossy(&ended.stderr)
    );
}

/// Whether `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// A payment, as a producer in a trace of its own sends it.
fn traced_payment() -> (Producer, Message) {
    let producer = Producer::new();
    let mut message = payments(1).remove(0);
    message.trace_parent = Some(producer.traceparent());
    (producer, message)
}

#[test]
fn a_run_exports_its_spans_in_the_producers_trace_before_it_exits() {
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let collector = Collector::start();
    let (producer, message) = traced_payment();
    run_with(
        &fixture,
        &["--otlp-endpoint", &collector.url],
        &format!("{}\n", to_line(&message)),
    );
    let posted = collector.posted();
    assert!(!posted.is_empty(), "nothing was exported");
    assert!(
        posted.iter().all(|request| request.path == "/v1/traces"),
        "{posted:?}"
    );
    let exported = collector.exported();
    assert!(
        holds(&exported, &producer.trace.to_bytes()),
        "no span of the producer's trace was exported"
    );
    assert!(
        holds(&exported, message.id.as_str().as_bytes()),
        "no span names the message"
    );
}

#[test]
fn the_standard_environment_variable_turns_the_export_on() {
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    let collector = Collector::start();
    let (producer, message) = traced_payment();
    let mut run = consumer(&fixture);
    run.env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url);
    run_command(run, &format!("{}\n", to_line(&message)));
    let exported = collector.exported();
    assert!(
        holds(&exported, &producer.trace.to_bytes()),
        "nothing of the trace was exported"
    );
}
