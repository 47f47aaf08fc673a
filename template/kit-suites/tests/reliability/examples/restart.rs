//! Restart: the inbox lives in the database, not in memory, so a
//! redelivery from a new process is still a duplicate.

use crate::support::harness::{RealInbox, restart};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn redelivery_from_a_new_process_is_a_duplicate() {
    for inbox in RealInbox::ALL {
        let play = restart(&DebitSubject::real(), &inbox, 50).expect("duplicates after a restart");
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 500)]);
        assert_eq!(play.observed.outcomes.duplicate, 50);
    }
    let play = restart(&NotifySubject::real(), &RealInbox::BATCHED, 20).expect("duplicates");
    assert_eq!(play.observed.state.len(), 40);
}
