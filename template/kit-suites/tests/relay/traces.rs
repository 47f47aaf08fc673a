//! A trace that follows a message: a producer's `traceparent` on an input
//! line reaches the message's `receive` span, the `deliver` span of each
//! consumer, the notifications it causes and the `relay` span of each
//! send, and the relayed line carries it on to its receiver. A producer's
//! retry of the same message, in a trace of its own, is a duplicate there
//! and causes no second notification.

use std::io::Cursor;
use std::sync::Arc;

use indicatif::ProgressBar;

use {{crate_name}}::envelope::to_line;
use {{crate_name}}::handlers;
use {{crate_name}}::pipeline::{self, Options};
use {{crate_name}}::source::lines::{LinesSource, Rejects};
use {{crate_name}}::stop::Stop;
use {{crate_name}}::store::Store;

use crate::Recorder;
use crate::support::harness::{RealInbox, fixture_for};
use crate::support::relay_rates::relay_until_done;
use crate::support::subjects::{DebitSubject, NotifySubject, payments};
use crate::support::traces::{Producer, problems, record_spans};

#[test]
fn a_producers_trace_goes_through_the_inbox_to_the_relayed_notifications() {
    record_spans();
    let fixture = fixture_for(
        &RealInbox::BATCHED,
        &[&DebitSubject::real(), &NotifySubject::real()],
    );
    let (first, retry) = (Producer::new(), Producer::new());
    let mut message = payments(1).remove(0);
    let mut input = Vec::new();
    for producer in [first, retry] {
        message.trace_parent = Some(producer.traceparent());
        input.push(to_line(&message));
    }
    let source = LinesSource::new(
        Box::new(Cursor::new(input.join("\n").into_bytes())),
        Rejects::to_json_lines(std::io::sink()),
        ProgressBar::hidden(),
    );
    let database = fixture.database();
    let policy = {{crate_name}}::inbox::Policy::default();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let report = runtime
        .block_on(pipeline::run_until(
            Box::new(source),
            handlers::all(),
            move || database.inbox(policy),
            Options {
                workers: 1,
                batch_size: 1,
                ..Options::default()
            },
            Arc::new(Stop::default()),
        ))
        .expect("the run");
    assert_eq!(
        (report.summary.applied, report.summary.duplicate),
        (2, 2),
        "debit and notify, each once; {}",
        report.summary
    );

    let mut sink = Recorder::default();
    let counts = relay_until_done(&fixture, &mut sink, 10);
    assert_eq!(counts.sent, 2, "one email, one push");
    let relayed: Vec<String> = sink
        .lines()
        .iter()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            line["traceparent"]
                .as_str()
                .unwrap_or_else(|| panic!("relayed without a traceparent: {line}"))
                .to_owned()
        })
        .collect();

    let id = message.id.as_str();
    let applied = [("debit", "applied"), ("notify", "applied")];
    let found = problems(first, id, &applied, &relayed);
    assert!(found.is_empty(), "the first delivery: {}", found.join("; "));
    let duplicates = [("debit", "duplicate"), ("notify", "duplicate")];
    let found = problems(retry, id, &duplicates, &[]);
    assert!(
        found.is_empty(),
        "the producer's retry: {}",
        found.join("; ")
    );

    // The check has teeth: a relay that started traces of its own, and a
    // consumer that dropped the producer's context, are both caught.
    let fresh = [Producer::new().traceparent(), Producer::new().traceparent()];
    assert!(!problems(first, id, &applied, &fresh).is_empty());
    assert!(!problems(Producer::new(), id, &applied, &[]).is_empty());
}
