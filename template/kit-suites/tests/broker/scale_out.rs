//! Scale-out: three `consume` processes share one durable consumer and one
//! PostgreSQL database; one of them is killed mid-run, and the other two
//! finish the stream. Every message applies once.

use std::process::Stdio;

use {{crate_name}}::pipeline::PROGRESS_LINE;

use crate::PATIENCE;
use crate::processes::{consume, redelivered};
use crate::support::harness::{Prng, RealInbox, assert_applied_once, fixture_for, inbox_rows};
use crate::support::kill::{Running, hold_at_progress, stop_and_collect};
use crate::support::nats::Broker;
use crate::support::subjects::{DebitSubject, NotifySubject, payments};

#[test]
fn three_processes_share_one_consumer_and_survive_a_kill() {
    let broker = Broker::new();
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit, &notify]);
    let messages = payments(200);
    for copy in ["first", "again"] {
        for message in &messages {
            broker.publish(message, &format!("{copy}-{}", message.id));
        }
    }
    // The process to kill starts first and is held right after one of its
    // first commits, before it acknowledges that batch: the survivors,
    // started then, must get what it took back from the broker.
    let after = 1 + Prng::from_env("SCALE_OUT_SEED").below(10);
    let held = hold_at_progress(consume(&fixture, &broker), PROGRESS_LINE, after)
        .unwrap_or_else(|ended| panic!("consume ended before commit {after}: {ended:?}"));
    let survivors: Vec<_> = (0..2)
        .map(|_| {
            Running::start(
                consume(&fixture, &broker)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
            )
        })
        .collect();
    let killed = held.kill();
    assert!(killed.landed_mid_run, "{}", killed.other_output);
    println!("kills landed mid-run: 1 of 1");

    assert!(
        broker.drained("processes", PATIENCE),
        "the survivors did not finish the stream"
    );
    let mut summaries = Vec::new();
    for child in survivors {
        let ended = stop_and_collect(child, PROGRESS_LINE, libc::SIGTERM);
        assert!(ended.status.success(), "{}", ended.other_output);
        summaries.push(ended.stdout.trim().to_owned());
    }
    println!("survivors: {summaries:?}");
    let redeliveries: u64 = summaries.iter().map(|s| redelivered(s)).sum();
    assert!(
        redeliveries > 0,
        "what the killed process took never came back: {summaries:?}"
    );
    assert_applied_once(&fixture, &debit, &messages);
    assert_applied_once(&fixture, &notify, &messages);
    assert_eq!(inbox_rows(&fixture, "debit"), 200);
}
