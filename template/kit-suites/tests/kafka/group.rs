//! Three `consume` processes in one consumer group: the first is held right
//! after one of its transactions (before that batch's offset commit), the
//! other two join, and the first is killed. Its partitions move to the
//! survivors, which read its applied-but-uncommitted records again: they
//! are duplicates, and every payment applies once.

use std::process::Stdio;

use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::pipeline::PROGRESS_LINE;

use crate::PATIENCE;
use crate::kit::summary::field;
use crate::processes::{GROUP, committed, consume};
use crate::support::database::Fixture;
use crate::support::harness::{Prng, RealInbox, fixture_for, inbox_rows};
use crate::support::kafka::Broker;
use crate::support::kill::{Running, hold_at_progress, stop_and_collect};
use crate::support::subjects::DebitSubject;

/// Accounts the payments come from: enough keys to reach every partition.
const ACCOUNTS: i64 = 12;
const PAYMENTS: i64 = 240;

#[test]
fn three_processes_in_one_group_survive_a_kill() {
    let broker = Broker::start();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    publish_spread(&broker, &fixture);
    // The process to kill starts first and takes every partition; it is
    // held right after one of its first transactions.
    let after = 1 + Prng::from_env("GROUP_KILL_SEED").below(4);
    let held = hold_at_progress(consume(&fixture, &broker), PROGRESS_LINE, after)
        .unwrap_or_else(|ended| panic!("consume ended before commit {after}: {ended:?}"));
    let (applied, offsets) = (inbox_rows(&fixture, "debit") as u64, committed(&broker));
    assert!(
        applied > offsets,
        "held after a transaction whose offsets were committed already ({applied} applied, {offsets} committed)"
    );
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
    println!("kills landed mid-run: 1 of 1 ({applied} applied, {offsets} committed when killed)");

    assert!(
        broker.drained(GROUP, PATIENCE),
        "the survivors did not commit the topic"
    );
    let mut summaries = Vec::new();
    for child in survivors {
        let ended = stop_and_collect(child, PROGRESS_LINE, libc::SIGTERM);
        assert!(ended.status.success(), "{}", ended.other_output);
        summaries.push(ended.stdout.trim().to_owned());
    }
    println!(
        "survivors: {summaries:?}; offsets committed per partition: {:?}",
        broker.committed(GROUP)
    );
    let duplicates: u64 = summaries.iter().map(|s| field(s, "duplicate")).sum();
    assert!(
        duplicates > 0,
        "what the killed process applied and did not commit never came back: {summaries:?}"
    );
    assert_spread_applied_once(&fixture);
}

/// Opens the accounts and publishes [`PAYMENTS`] payments of 1 spread over
/// them (and so over the partitions: records are keyed by account).
pub fn publish_spread(broker: &Broker, fixture: &Fixture) {
    fixture.with_tables(|tables| {
        (2..=ACCOUNTS).try_for_each(|account| tables.open_account(account, 1_000))
    });
    for n in 0..PAYMENTS {
        broker.publish(&Message {
            id: MessageId::new(format!("pay-{n:05}")).unwrap(),
            event: Event::PaymentCaptured(PaymentCaptured {
                account: account_of(n),
                amount: 1,
            }),
            trace_parent: None,
        });
    }
}

fn account_of(payment: i64) -> i64 {
    1 + payment % ACCOUNTS
}

/// Asserts that every payment [`publish_spread`] published applied once.
#[track_caller]
pub fn assert_spread_applied_once(fixture: &Fixture) {
    let problems = spread_problems(fixture);
    assert!(problems.is_empty(), "{}", problems.join("; "));
}

/// What is wrong, if anything, with the payments [`publish_spread`]
/// published: each must have applied once.
pub fn spread_problems(fixture: &Fixture) -> Vec<String> {
    let mut problems = Vec::new();
    let rows = inbox_rows(fixture, "debit");
    if rows != PAYMENTS as usize {
        problems.push(format!("{rows} inbox rows for {PAYMENTS} payments"));
    }
    let expected: Vec<(i64, i64)> = (1..=ACCOUNTS)
        .map(|a| {
            let paid = (0..PAYMENTS).filter(|n| account_of(*n) == a).count() as i64;
            (a, 1_000 - paid)
        })
        .collect();
    let balances = fixture.with_tables(|tables| tables.balances());
    if balances != expected {
        problems.push(format!(
            "balances {balances:?}, not each payment once: {expected:?}"
        ));
    }
    problems
}
