//! Run twice: one worker delivers the same 50 payments twice.

use crate::support::harness::{RealInbox, run_twice};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn debits_each_payment_once() {
    for inbox in RealInbox::ALL {
        let play = run_twice(&DebitSubject::real(), &inbox, 50).expect("applied once");
        let observed = play.observed;
        assert_eq!(
            observed.state.balances,
            vec![(ACCOUNT, 500)],
            "1,000 minus 50 payments of 10"
        );
        assert_eq!(observed.state.debits.len(), 50);
        assert_eq!(observed.inbox_rows, 50);
        assert_eq!(
            (observed.outcomes.applied, observed.outcomes.duplicate),
            (50, 50)
        );
    }
}

#[test]
fn notifies_each_payment_once() {
    for inbox in RealInbox::ALL {
        let play = run_twice(&NotifySubject::real(), &inbox, 50).expect("applied once");
        assert_eq!(play.observed.state.len(), 100, "50 events x 2 channels");
    }
}
