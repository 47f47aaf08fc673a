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
    InboxUnderTest, Observed, RealInbox, Subject, ThisProject, play_parallel,
    play_redeliver_after_failure, play_run_twice,
};
use support::subjects::{ACCOUNT, DebitSubject, LedgerState, payments};

const PAYMENTS: usize = 50;

fn main() {
    println!(
        "Account {ACCOUNT} opens at 1,000; {PAYMENTS} payments of 10 are each debited once: 500 is right.\n"
    );
    println!(
        "{:<38} {:<44} {:>8} {:>8} {:>10}",
        "implementation", "scenario", "expected", "actual", "inbox rows"
    );
    let debit = DebitSubject::real();
    let fifty = debit.model(&payments(PAYMENTS)).state;
    let one = debit.model(&payments(1)).state;

    row(
        "no inbox",
        "2 workers each deliver the same 50",
        &fifty,
        play_parallel(&debit, &NoInbox, 2, PAYMENTS).observed,
    );
    row(
        "check-then-act",
        "1 worker delivers the 50 twice",
        &fifty,
        play_run_twice(&debit, &CheckThenAct, PAYMENTS).observed,
    );
    for run in 1..=4 {
        let observed = play_parallel(&debit, &CheckThenAct, 4, PAYMENTS).observed;
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
        play_parallel(&debit, &RealInbox::ONE_PER_TRANSACTION, 4, PAYMENTS).observed,
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

fn redelivery_row(name: &str, expected: &LedgerState, inbox: &dyn InboxUnderTest<ThisProject>) {
    let play = play_redeliver_after_failure(&DebitSubject::real(), inbox, 1, |_| true);
    row(
        name,
        "first attempt fails, then redelivered",
        expected,
        play.observed,
    );
}

fn row(
    implementation: &str,
    scenario: &str,
    expected: &LedgerState,
    observed: Observed<LedgerState>,
) {
    let balance = |state: &LedgerState| state.balances.first().map_or(0, |(_, balance)| *balance);
    let mark = if observed.state.balances == expected.balances {
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
