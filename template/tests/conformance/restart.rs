//! Restart: the inbox lives in the database, not in memory, so a
//! redelivery after a reopen is still a duplicate.

use crate::support::harness::{RealInbox, restart};
use crate::support::subjects::{ACCOUNT, DebitSubject};

#[test]
fn redelivery_after_reopening_is_a_duplicate() {
    for inbox in RealInbox::ALL {
        let observed = restart(&DebitSubject, &inbox, 50).unwrap_or_else(|v| panic!("{v}"));
        assert_eq!(observed.state, vec![(ACCOUNT, 500)]);
        assert_eq!(observed.outcomes.duplicate, 50);
    }
}
