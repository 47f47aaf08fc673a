//! Exact ids: ids that differ only in case, surrounding whitespace,
//! Unicode normalization or their last byte are different messages.

use crate::support::harness::{RealInbox, exact_ids};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject};

#[test]
fn ids_that_differ_in_any_byte_are_different_messages() {
    for inbox in RealInbox::ALL {
        let play = exact_ids(&DebitSubject::real(), &inbox).expect("every id applied once");
        assert_eq!(play.messages.len(), 10);
        assert_eq!(play.observed.inbox_rows, 10);
        assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 900)]);
    }
    let play = exact_ids(&NotifySubject::real(), &RealInbox::BATCHED).expect("every id once");
    assert_eq!(play.observed.state.len(), 20);
}
