//! Known-broken implementations, kept so the tests can prove they catch
//! them. Each one is a mistake that looks right in review; the comment on
//! each says which scenario catches it and why. The broken inboxes,
//! sources and routes are the test kit's (`inbox_kit_testkit::broken`,
//! re-exported here); the traps only one database has live in its own
//! support module. None of this is ever used by the consumer itself. Here:
//!
//! * `handlers`: this project's handlers doing the wrong thing.

mod handlers;

pub use handlers::*;
pub use inbox_kit_testkit::broken::*;

use {{crate_name}}::handlers::Handlers;
use {{crate_name}}::inbox::Inbox;

use crate::support::database::Fixture;
use crate::support::harness::{InboxUnderTest, RealInbox, Scenario, ThisProject};

/// A database-specific trap: a broken inbox, the scenarios it passes, and
/// the one that must catch it.
pub struct Trap {
    pub inbox: Box<dyn InboxUnderTest<ThisProject>>,
    pub passes: Vec<Scenario>,
    pub caught_by: Scenario,
}

/// The real inbox on a schema changed by `patch` (SQL run on a fresh
/// database): how a broken unique key is tried.
pub struct WithSchema {
    pub name: &'static str,
    pub patch: &'static str,
}

impl InboxUnderTest<ThisProject> for WithSchema {
    fn name(&self) -> String {
        self.name.to_owned()
    }
    fn prepare(&self, fixture: &Fixture) {
        fixture.execute(self.patch);
    }
    fn open(&self, fixture: &Fixture) -> Box<dyn Inbox<Handlers>> {
        RealInbox::BATCHED.open(fixture)
    }
}
