//! Retention that deletes what it must keep, or reports what it did
//! wrongly: each is caught by the purge at the window's edge
//! ([`crate::harness::scenarios::purge_edge`]).

use std::time::Duration;

use inbox_kit_runtime::retention::cutoff_millis;
use inbox_kit_runtime::store::Purged;

use crate::harness::scenarios::{Purger, RealPurge};
use crate::harness::{Fixture, Project};

/// Every broken purge here.
pub fn all_purges<P: Project>() -> Vec<Box<dyn Purger<P>>> {
    vec![
        Box::new(SloppyPurge),
        Box::new(PurgeDeletesAttemptsEarly),
        // A dead letter nobody looked at yet is lost. Caught at the edge,
        // where every dead letter must stay.
        Box::new(PurgeAlsoDeletes {
            what: "old dead letters",
            table: "dead_letters",
            age: "dead_at",
        }),
        Box::new(PurgeCountsOneTable),
        Box::new(PurgeProgressPerWindow),
        // Old notifications by when they were queued: one the relay has not
        // sent yet (the broker was down for a month) is lost. Caught at the
        // edge, where every unsent notification must stay.
        Box::new(PurgeAlsoDeletes {
            what: "old notifications not sent yet",
            table: "notifications",
            age: "queued_at",
        }),
        Box::new(PurgeInOneTransaction),
    ]
}

/// A purge whose cutoff is three hours late: it deletes rows that are still
/// inside the window, so a redelivery in those hours applies twice. Caught
/// only by the purge at the window's edge.
pub struct SloppyPurge;

impl<P: Project> Purger<P> for SloppyPurge {
    fn name(&self) -> String {
        "purge three hours too eager".into()
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        Purger::<P>::purge(
            &RealPurge,
            fixture,
            older_than - Duration::from_secs(3 * 3600),
            progress,
        )
    }
}

/// The real purge of inbox rows, but every failed attempt is "old data"
/// and goes too: a message that keeps failing starts its count again after
/// each purge and never reaches its dead letter. Caught at the edge, where
/// the attempts inside the window must stay.
pub struct PurgeDeletesAttemptsEarly;

impl<P: Project> Purger<P> for PurgeDeletesAttemptsEarly {
    fn name(&self) -> String {
        "purge that deletes every attempt count".into()
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        let purged = Purger::<P>::purge(&RealPurge, fixture, older_than, progress);
        fixture.raw().run("DELETE FROM attempts;").expect("delete");
        purged
    }
}

/// The real purge, then every row of `table` whose `age` column is older
/// than the cutoff, as if those were old rows like the others.
pub struct PurgeAlsoDeletes {
    what: &'static str,
    table: &'static str,
    age: &'static str,
}

impl<P: Project> Purger<P> for PurgeAlsoDeletes {
    fn name(&self) -> String {
        format!("purge that deletes {}", self.what)
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        let purged = Purger::<P>::purge(&RealPurge, fixture, older_than, progress);
        let cutoff = cutoff_millis(older_than);
        fixture
            .raw()
            .run(&format!(
                "DELETE FROM {} WHERE {} < {cutoff};",
                self.table, self.age
            ))
            .expect("delete");
        purged
    }
}

/// The real purge, but it reports only the inbox rows it deleted, as if
/// the attempt counts were not rows: an operator reading the summary (or a
/// dashboard) is told less than what is gone. Caught by the count the
/// scenario knows it deleted.
pub struct PurgeCountsOneTable;

impl<P: Project> Purger<P> for PurgeCountsOneTable {
    fn name(&self) -> String {
        "purge that reports only its inbox rows".into()
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        Purged {
            attempt_rows: 0,
            ..Purger::<P>::purge(&RealPurge, fixture, older_than, progress)
        }
    }
}

/// The real purge, with its progress told each window's rows instead of
/// the running total: a progress bar that jumps back and never reaches
/// the end. Caught by the progress, which must only grow, up to the total.
pub struct PurgeProgressPerWindow;

impl<P: Project> Purger<P> for PurgeProgressPerWindow {
    fn name(&self) -> String {
        "purge whose progress counts each window alone".into()
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        let mut before = 0;
        Purger::<P>::purge(&RealPurge, fixture, older_than, &mut |total| {
            progress(total - before);
            before = total;
        })
    }
}

/// The real purge, every expired row of a table in one transaction: it
/// deletes the right rows, but a month of rows holds its locks for as long
/// as the whole table takes and deliveries wait behind it. Caught by the
/// progress, which no window may move by more than its keys.
pub struct PurgeInOneTransaction;

impl<P: Project> Purger<P> for PurgeInOneTransaction {
    fn name(&self) -> String {
        "purge that deletes a whole table in one transaction".into()
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        fixture.purge(older_than, u32::MAX, progress)
    }
}
