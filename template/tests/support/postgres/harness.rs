//! The PostgreSQL fixture as the test kit's harness sees it: its
//! `Fixture` and `Tripwires`, each method the fixture's own of the same
//! name.

use std::time::Duration;

use inbox_kit_testkit::harness::{Conflicts, HeldClaim, InboxWithLetters, Raw, Scratch, Tripwires};

use {{crate_name}}::handlers::{Handlers, Tables};
use {{crate_name}}::inbox::{DeadLetter, Inbox, Policy, StorageError};
use {{crate_name}}::store::{Purged, Store};

use super::{CONCURRENT_WRITERS, Fixture};
use crate::support::harness::ThisProject;

/// What the test kit's judge reads from a fixture: the fixture's own
/// methods of the same names.
impl inbox_kit_testkit::harness::Fixture<ThisProject> for Fixture {
    const CONCURRENT_WRITERS: bool = CONCURRENT_WRITERS;

    fn new() -> Self {
        Fixture::new()
    }

    fn location(&self) -> String {
        Fixture::location(self)
    }

    fn attach(location: &str) -> Self {
        Fixture::attach(location)
    }

    fn identity(&self) -> String {
        Fixture::identity(self)
    }

    fn execute(&self, sql: &str) {
        Fixture::execute(self, sql)
    }

    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut (dyn Tables + '_)) -> Result<T, StorageError>,
    ) -> T {
        Fixture::with_tables(self, work)
    }

    fn waiting_on_locks(&self) -> usize {
        Fixture::waiting_on_locks(self)
    }

    fn inbox_rows(&self, consumer: &str) -> usize {
        Fixture::inbox_rows(self, consumer)
    }

    fn dead_letters(&self) -> Vec<DeadLetter> {
        Fixture::dead_letters(self)
    }

    fn failures_counted(&self, consumer: &str) -> u64 {
        Fixture::failures_counted(self, consumer)
    }

    fn purge(
        &self,
        older_than: Duration,
        keys_per_transaction: u32,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        let purged = self
            .database()
            .purge(older_than, keys_per_transaction, progress);
        purged.expect("purge")
    }

    fn raw(&self) -> Box<dyn Raw<ThisProject>> {
        Fixture::raw(self)
    }

    fn raw_waiting_forever(&self) -> Box<dyn Raw<ThisProject>> {
        Fixture::raw_waiting_forever(self)
    }

    fn inbox(&self, policy: Policy) -> Box<dyn InboxWithLetters<Handlers>> {
        Fixture::inbox(self, policy)
    }

    fn scratch<T>(work: impl FnOnce(&mut dyn Scratch<ThisProject>) -> T) -> T {
        Fixture::scratch(|scratch| work(scratch))
    }
}

/// The faults this project's fixture sets off: its own methods of the
/// same names.
impl Tripwires<Handlers> for Fixture {
    fn fail_commits(&self, on: bool) {
        Fixture::fail_commits(self, on)
    }

    fn refuse_claims(&self, message_ids: &[&str]) {
        Fixture::refuse_claims(self, message_ids)
    }

    fn heal_claims(&self) {
        Fixture::heal_claims(self)
    }

    fn hold_claim(&self, consumer: &str, id: &str) -> Box<dyn HeldClaim> {
        Box::new(Fixture::hold_claim(self, consumer, id))
    }

    fn conflicts(&self) -> Option<Box<dyn Conflicts + '_>> {
        Fixture::conflicts(self).map(|conflicts| Box::new(conflicts) as Box<dyn Conflicts + '_>)
    }

    fn impatient_inbox(&self, policy: Policy, wait: Duration) -> Box<dyn Inbox<Handlers>> {
        Fixture::impatient_inbox(self, policy, wait)
    }
}
