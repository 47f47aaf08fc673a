//! A database made by an earlier version of the consumer keeps working: a
//! column added since (the outbox's `trace_parent`) is added by `migrate`
//! (and by every command that creates the tables), and what it holds is
//! then kept and sent on.

use std::io::Write;
use std::process::Stdio;

use {{crate_name}}::envelope::to_line;

use crate::consumer;
use crate::support::database::Fixture;
use crate::support::subjects::payments;
use crate::support::traces::Producer;

#[test]
fn an_outbox_made_before_trace_parent_gets_the_column_and_keeps_the_trace() {
    let fixture = Fixture::new();
    fixture.execute("ALTER TABLE notifications DROP COLUMN trace_parent");
    let migrated = consumer(&fixture).arg("migrate").output().expect("migrate");
    assert!(migrated.status.success(), "{migrated:?}");

    let producer = Producer::new();
    let mut message = payments(1).remove(0);
    message.trace_parent = Some(producer.traceparent());
    let mut run = consumer(&fixture)
        .args(["run", "--consumer", "notify", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the consumer");
    writeln!(run.stdin.take().expect("stdin"), "{}", to_line(&message)).expect("write the input");
    let ran = run.wait_with_output().expect("the run ends");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );

    let relayed = consumer(&fixture)
        .args(["relay", "send", "--until-done", "--output", "-"])
        .output()
        .expect("relay");
    assert!(relayed.status.success(), "{relayed:?}");
    // The relayed lines, then the relay's summary.
    let lines = String::from_utf8(relayed.stdout).expect("UTF-8");
    let traces: Vec<serde_json::Value> = lines
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).expect("a JSON line")["traceparent"]
                .clone()
        })
        .collect();
    // No spans are recorded here: the producer's context goes on unchanged.
    assert_eq!(
        traces,
        vec![serde_json::Value::from(producer.traceparent()); 2],
        "{lines}"
    );
}
