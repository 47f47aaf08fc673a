//! Restart: the inbox lives in the database, not in memory, so a
//! redelivery from a new process is still a duplicate.

use crate::support::broken;
use crate::support::database::traps::traps;
use crate::support::harness::{
    InboxUnderTest, RealInbox, ThisProject, restart, serve_second_process,
};
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

/// Not a test of its own: the second process of the restart scenario (this
/// binary run again by the harness). Run alone, it does nothing.
#[test]
#[ignore = "run by the restart scenario in its second process"]
fn second_process() {
    serve_second_process(|name| {
        let mut inboxes: Vec<Box<dyn InboxUnderTest<ThisProject>>> = RealInbox::ALL
            .into_iter()
            .map(|inbox| Box::new(inbox) as Box<dyn InboxUnderTest<ThisProject>>)
            .collect();
        inboxes.extend(broken::all_inboxes());
        inboxes.extend(traps().into_iter().map(|trap| trap.inbox));
        inboxes.into_iter().find(|inbox| inbox.name() == name)
    });
}
