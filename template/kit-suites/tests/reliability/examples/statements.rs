//! A handler's statement that fails inside a delivery rolls back that
//! delivery alone (counted, redelivered, applied once) while its siblings
//! in the batch apply; where the database can end a whole transaction
//! from a statement (SQLite), nothing of that batch is reported applied
//! and the redelivery applies everything once. A payment its handler
//! cannot apply (no such account) fails alone too, in a set-based run or
//! not.

use crate::support::harness::{
    Failing, RealInbox, STATEMENTS_FAILED, cannot_apply, statement_fails,
};
use crate::support::subjects::{ACCOUNT, DebitSubject};

#[test]
fn a_failing_statement_rolls_back_its_delivery_and_its_siblings_apply() {
    for inbox in RealInbox::ALL {
        let play = statement_fails(&DebitSubject::real(), &inbox, 10, Failing::Statement)
            .expect("siblings apply, the failed ones on redelivery")
            .expect("every database can fail a statement");
        assert_eq!(
            play.step(STATEMENTS_FAILED).state.balances,
            vec![(ACCOUNT, 920)]
        );
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 900)]);
    }
}

#[test]
fn a_statement_that_ends_the_whole_transaction_reports_nothing_applied() {
    let played = statement_fails(
        &DebitSubject::real(),
        &RealInbox::BATCHED,
        10,
        Failing::WholeTransaction,
    )
    .expect("nothing reported applied, everything applied on redelivery");
    if let Some(play) = played {
        assert_eq!(
            play.step(STATEMENTS_FAILED).state.balances,
            vec![(ACCOUNT, 1_000)]
        );
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 900)]);
    } else {
        println!("this database cannot end a transaction from a statement");
    }
}

#[test]
fn a_payment_from_a_missing_account_fails_alone_among_others() {
    for inbox in RealInbox::ALL {
        let play = cannot_apply(&DebitSubject::real(), &inbox)
            .expect("it fails alone, the others apply")
            .expect("the debit subject has a payment it cannot apply");
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 900)]);
        assert_eq!(play.observed.outcomes.failed, 1);
    }
}
