//! A COMMIT that fails: nothing is reported as applied (so nothing would be
//! acknowledged), nothing is stored, and the redelivery applies each
//! message once.

use crate::support::harness::{COMMIT_FAILED, RealInbox, failed_commit};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn a_failed_commit_reports_nothing_and_the_redelivery_applies_once() {
    for inbox in RealInbox::ALL {
        let play = failed_commit(&DebitSubject::real(), &inbox, 20).expect("nothing reported");
        let refused = play.step(COMMIT_FAILED);
        assert_eq!(refused.outcomes.applied, 0);
        assert_eq!(
            refused.outcomes.failed, 20,
            "every delivery of the batch failed"
        );
        assert_eq!(refused.state.balances, vec![(ACCOUNT, 1_000)]);
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 800)]);
    }
    let play = failed_commit(&NotifySubject::real(), &RealInbox::BATCHED, 5).expect("nothing");
    assert!(play.step(COMMIT_FAILED).state.is_empty());
    assert_eq!(play.observed.state.len(), 10);
}
