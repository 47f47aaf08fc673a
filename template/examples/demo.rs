//! The classic failure table of the inbox pattern, live: what each way of writing a consumer does to an
//! account holding 1,000 when fifty payments of 10 are delivered more than
//! once. Every row runs right now on a temporary database.
//!
//! ```text
//! cargo run --example demo
//! ```

#[path = "../tests/support/mod.rs"]
mod support;

use support::broken::{CheckThenAct, NoInbox, RecordFirst};
use support::harness::{
    InboxUnderTest, Observed, RealInbox, Subject, once_only_state, play_failure_then_redelivery,
    play_parallel, play_run_twice,
};
use support::subjects::{ACCOUNT, DebitSubject};

const PAYMENTS: usize = 50;

fn main() {
    println!(
        "Account {ACCOUNT} opens at 1,000; {PAYMENTS} payments of 10 are each debited once: 500 is right.\n"
    );
    println!(
        "{:<38} {:<44} {:>8} {:>8} {:>10}",
        "implementation", "scenario", "expected", "actual", "inbox rows"
    );
    let fifty =
        once_only_state(&DebitSubject, &DebitSubject.messages(PAYMENTS)).expect("debit applies");
    let one = once_only_state(&DebitSubject, &DebitSubject.messages(1)).expect("debit applies");

    row(
        "no inbox",
        "2 workers each deliver the same 50",
        &fifty,
        play_parallel(&DebitSubject, &NoInbox, 2, PAYMENTS).observed,
    );
    row(
        "check-then-act",
        "1 worker delivers the 50 twice",
        &fifty,
        play_run_twice(&DebitSubject, &CheckThenAct, PAYMENTS).observed,
    );
    for run in 1..=4 {
        let observed = play_parallel(&DebitSubject, &CheckThenAct, 4, PAYMENTS).observed;
        row(
            "check-then-act",
            &format!("4 workers deliver the same 50 (run {run})"),
            &fifty,
            observed,
        );
    }
    row(
        "inbox: insert first, one transaction",
        "4 workers deliver the same 50",
        &fifty,
        play_parallel(&DebitSubject, &RealInbox::ONE_PER_TRANSACTION, 4, PAYMENTS).observed,
    );
    redelivery_row("record-first", &one, &RecordFirst);
    redelivery_row(
        "inbox: same transaction",
        &one,
        &RealInbox::ONE_PER_TRANSACTION,
    );
    println!(
        "\nCheck-then-act passes the run-twice test and still loses money in parallel, with exactly"
    );
    println!(
        "50 inbox rows. Record-first passes both and loses a payment for good when one attempt fails."
    );
}

fn redelivery_row(name: &str, expected: &[(i64, i64)], inbox: &dyn InboxUnderTest) {
    let run = play_failure_then_redelivery(&DebitSubject, inbox, 1, |_| true);
    row(
        name,
        "first attempt fails, then redelivered",
        expected,
        run.redelivered.observed,
    );
}

fn row(
    implementation: &str,
    scenario: &str,
    expected: &[(i64, i64)],
    observed: Observed<Vec<(i64, i64)>>,
) {
    let balance = |state: &[(i64, i64)]| state.first().map_or(0, |(_, balance)| *balance);
    let mark = if observed.state == expected {
        ""
    } else {
        "  <-- wrong"
    };
    println!(
        "{implementation:<38} {scenario:<44} {:>8} {:>8} {:>10}{mark}",
        balance(expected),
        balance(&observed.state),
        observed.inbox_rows
    );
}
