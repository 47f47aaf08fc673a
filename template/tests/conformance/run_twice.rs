//! Run twice: one worker delivers the same 50 payments twice.

use crate::support::harness::{RealInbox, run_twice};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn debits_each_payment_once() {
    for inbox in RealInbox::ALL {
        let observed = run_twice(&DebitSubject, &inbox, 50).unwrap_or_else(|v| panic!("{v}"));
        assert_eq!(
            observed.state,
            vec![(ACCOUNT, 500)],
            "1,000 minus 50 payments of 10"
        );
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
        let observed =
            run_twice(&NotifySubject::real(), &inbox, 50).unwrap_or_else(|v| panic!("{v}"));
        assert_eq!(observed.state.len(), 100, "50 events x 2 channels");
    }
}
