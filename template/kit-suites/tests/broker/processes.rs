//! The `consume` command as a process: killed with SIGKILL mid-run and
//! restarted, and stopped with SIGTERM (it finishes and acknowledges what
//! it took, then exits 0).

use std::process::Command;
use std::time::Duration;

use {{crate_name}}::pipeline::PROGRESS_LINE;

use crate::PATIENCE;
use crate::kit::consume::consume_to_the_end;
use crate::kit::summary::field;
use crate::support::database::Fixture;
use crate::support::harness::{Prng, RealInbox, assert_applied_once, fixture_for, inbox_rows};
use crate::support::kill::{kill_at_progress, signal_at_progress};
use crate::support::nats::proxy::{SettleProxy, withhold_nothing};
use crate::support::nats::{Broker, nats_address, nats_url};
use crate::support::subjects::{DebitSubject, NotifySubject, payments};

pub const DURABLE: &str = "processes";
const ACK_WAIT: Duration = Duration::from_secs(2);

/// `consume` on `fixture`'s database and `broker`'s stream, small batches,
/// a progress line per commit.
pub fn consume(fixture: &Fixture, broker: &Broker) -> Command {
    consume_at(fixture, broker, &nats_url())
}

/// Like [`consume`], reaching the server at `nats_url` (a proxy's).
pub fn consume_at(fixture: &Fixture, broker: &Broker, nats_url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"));
    command
        .args(fixture.cli_args())
        .arg("consume")
        .args(broker.cli_args(nats_url, DURABLE, ACK_WAIT))
        .args(["--progress-lines", "--batch-size", "8"]);
    command
}

/// The `redelivered=N` a `consume` summary line reports.
pub fn redelivered(summary: &str) -> u64 {
    field(summary, "redelivered")
}

#[test]
fn consume_killed_mid_run_and_restarted_ends_once_only() {
    let broker = Broker::new();
    let (debit, notify) = (DebitSubject::real(), NotifySubject::real());
    let fixture = fixture_for(&RealInbox::BATCHED, &[&debit, &notify]);
    let messages = payments(150);
    for copy in ["first", "again"] {
        for message in &messages {
            broker.publish(message, &format!("{copy}-{}", message.id));
        }
    }
    let mut random = Prng::from_env("BROKER_KILL_SEED");
    // 300 stream messages in batches of 8 make at least 38 commits: each
    // kill lands after one of the first ten of its run.
    const KILLS: u64 = 4;
    for kill in 1..=KILLS {
        let after = 1 + random.below(10);
        let run = kill_at_progress(consume(&fixture, &broker), PROGRESS_LINE, after);
        assert!(
            run.landed_mid_run,
            "kill {kill} (after commit {after}) did not land mid-run ({}):\n{}",
            run.status, run.other_output
        );
    }
    println!("kills landed mid-run: {KILLS} of {KILLS}");
    let summary = consume_to_the_end(consume(&fixture, &broker), || {
        broker.drained(DURABLE, PATIENCE)
    });
    println!("after 4 kills: {summary}");
    assert!(
        redelivered(&summary) > 0,
        "what the killed processes took was never redelivered: {summary}"
    );
    assert_applied_once(&fixture, &debit, &messages);
    assert_applied_once(&fixture, &notify, &messages);
    assert_eq!(inbox_rows(&fixture, "debit"), 150);
    assert_eq!(inbox_rows(&fixture, "notify"), 150);
}

#[test]
fn sigterm_finishes_and_acknowledges_what_was_taken_then_exits_0() {
    let broker = Broker::new();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    for message in &payments(200) {
        broker.publish(message, message.id.as_str());
    }
    // Through a settle proxy: what the summary counts as acknowledged must
    // be what the server received, each asking for a confirmation.
    let proxy = SettleProxy::start(&nats_address(), withhold_nothing);
    let command = consume_at(&fixture, &broker, &proxy.url);
    let run = signal_at_progress(command, PROGRESS_LINE, 2, libc::SIGTERM);
    assert!(run.landed_mid_run, "{}", run.other_output);
    assert!(
        run.status.success(),
        "SIGTERM ended consume with {}:\n{}",
        run.status,
        run.other_output
    );
    assert!(
        run.stdout.contains("applied="),
        "no summary after SIGTERM: {:?}",
        run.stdout
    );
    let summary = run.stdout.trim();
    let confirmed = ["acknowledged", "retried", "terminated"]
        .iter()
        .map(|name| field(summary, name))
        .sum();
    let problems = proxy
        .counts()
        .problems(confirmed, field(summary, "unconfirmed"));
    assert!(problems.is_empty(), "{}: {summary}", problems.join("; "));
    let backlog = broker.backlog(DURABLE);
    assert_eq!(
        backlog.unacknowledged, 0,
        "messages taken before SIGTERM were left unacknowledged: {backlog:?}"
    );
}
