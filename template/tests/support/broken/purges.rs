//! Retention that deletes what it must keep.

use std::time::Duration;

use {{crate_name}}::database::Database;
use {{crate_name}}::store::Purged;

use crate::support::harness::{Purger, RealPurge};

/// A purge whose cutoff is three hours late: it deletes rows that are still
/// inside the window, so a redelivery in those hours applies twice. Caught
/// only by the purge at the window's edge.
pub struct SloppyPurge;

impl Purger for SloppyPurge {
    fn name(&self) -> String {
        "purge three hours too eager".into()
    }
    fn purge(&self, database: &Database, older_than: Duration) -> Purged {
        RealPurge.purge(database, older_than - Duration::from_secs(3 * 3600))
    }
}

