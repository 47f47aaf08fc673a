//! The second process of the scenarios that need one (`required::restart`:
//! a redelivery from a new process; `required::rules_across_messages`:
//! workers of two processes): this test binary, run again by the harness
//! for this one test (`restart::second_process`, the name the test kit
//! runs), which plays the inbox it is given by name.

use crate::support::broken;
use crate::support::database::traps::traps;
use crate::support::harness::{InboxUnderTest, RealInbox, ThisProject, serve_second_process};

/// Not a test of its own: run alone, it does nothing.
#[test]
#[ignore = "run by the harness in its second process"]
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
