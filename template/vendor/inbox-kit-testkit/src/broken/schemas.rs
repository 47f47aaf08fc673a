//! Traps that live in a database's schema or in one database's behaviour:
//! the real inbox on a schema with a broken unique key ([`WithSchema`]),
//! and a trap with the scenarios it passes and the one that catches it
//! ([`Trap`]), which a project's teeth play from a table.

use inbox_kit_runtime::delivery::Inbox;

use crate::harness::scenarios::Scenario;
use crate::harness::{Fixture, InboxUnderTest, Project, RealInbox};

/// A broken inbox, the scenarios it passes, and the one that must catch
/// it.
pub struct Trap<P: Project> {
    pub inbox: Box<dyn InboxUnderTest<P>>,
    pub passes: Vec<Scenario>,
    pub caught_by: Scenario,
}

/// The real inbox on a schema changed by `patch` (SQL run on a fresh
/// database): how a broken unique key is tried.
pub struct WithSchema {
    pub name: &'static str,
    pub patch: &'static str,
}

impl<P: Project> InboxUnderTest<P> for WithSchema {
    fn name(&self) -> String {
        self.name.to_owned()
    }
    fn prepare(&self, fixture: &P::Fixture) {
        fixture.execute(self.patch);
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        RealInbox::BATCHED.open(fixture)
    }
}
