//! Which offset each partition may commit.
//!
//! Kafka remembers one number per partition: the offset the group resumes
//! from. Committing it says "everything before this is done". So it may
//! only move up to the first message that is not settled yet: a message
//! whose transaction failed and is being retried holds its partition back,
//! however many later ones committed meanwhile. Committing the highest
//! settled offset instead would skip the failed one after a restart.
//!
//! Messages of a partition are taken in offset order, so the commit point
//! is the lowest offset still in flight, or, with none in flight, the one
//! after the last taken. Offsets that were never taken (a compacted topic,
//! transaction markers) are passed over, as they should be.

use std::collections::{BTreeSet, HashMap};

/// A partition of a topic.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    pub topic: String,
    pub partition: i32,
}

/// The offsets taken and settled, per partition owned.
#[derive(Debug, Default)]
pub struct Offsets {
    partitions: HashMap<Partition, Progress>,
}

#[derive(Debug)]
struct Progress {
    /// Taken and not settled yet (handed to a worker, or waiting to be
    /// retried).
    unsettled: BTreeSet<i64>,
    /// The highest offset taken.
    last_taken: i64,
    /// The offset last committed, or where this owner started reading
    /// (what the group had committed then, or the topic's start).
    committed: i64,
}

impl Offsets {
    /// A message of `partition` was taken. Offsets of a partition must be
    /// taken in increasing order.
    pub fn take(&mut self, partition: &Partition, offset: i64) {
        let progress = self
            .partitions
            .entry(partition.clone())
            .or_insert_with(|| Progress {
                unsettled: BTreeSet::new(),
                last_taken: offset,
                committed: offset,
            });
        progress.unsettled.insert(offset);
        progress.last_taken = progress.last_taken.max(offset);
    }

    /// The message at `offset` is done with: committed or dead-lettered in
    /// the database. (A retried message is not settled.) An offset of a
    /// partition no longer owned, or not taken, changes nothing.
    pub fn settle(&mut self, partition: &Partition, offset: i64) {
        if let Some(progress) = self.partitions.get_mut(partition) {
            progress.unsettled.remove(&offset);
        }
    }

    /// Whether `partition` is owned (has taken messages since it was last
    /// forgotten).
    pub fn owns(&self, partition: &Partition) -> bool {
        self.partitions.contains_key(partition)
    }

    /// Messages taken and not settled, over every partition.
    pub fn unsettled(&self) -> usize {
        self.partitions.values().map(|p| p.unsettled.len()).sum()
    }

    /// Messages of `partition` taken and not settled.
    pub fn unsettled_in(&self, partition: &Partition) -> usize {
        self.partitions
            .get(partition)
            .map_or(0, |progress| progress.unsettled.len())
    }

    /// The offset `partition` may commit now: the first one not settled.
    pub fn commit_point(&self, partition: &Partition) -> Option<i64> {
        self.partitions.get(partition).map(Progress::commit_point)
    }

    /// The partitions whose commit point moved past what was last
    /// committed, with that point: what to commit now. Call
    /// [`Offsets::committed`] once the broker confirmed it.
    pub fn due(&self) -> Vec<(Partition, i64)> {
        let mut due: Vec<(Partition, i64)> = self
            .partitions
            .iter()
            .filter_map(|(partition, progress)| {
                let point = progress.commit_point();
                (progress.committed < point).then(|| (partition.clone(), point))
            })
            .collect();
        due.sort();
        due
    }

    /// The broker confirmed `offset` as `partition`'s committed offset.
    pub fn committed(&mut self, partition: &Partition, offset: i64) {
        if let Some(progress) = self.partitions.get_mut(partition) {
            progress.committed = progress.committed.max(offset);
        }
    }

    /// `partition` was revoked: whatever of it is still unsettled will be
    /// delivered again to its next owner, from its committed offset.
    pub fn forget(&mut self, partition: &Partition) {
        self.partitions.remove(partition);
    }
}

impl Progress {
    fn commit_point(&self) -> i64 {
        self.unsettled
            .first()
            .copied()
            .unwrap_or(self.last_taken + 1)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn p(partition: i32) -> Partition {
        Partition {
            topic: "events".into(),
            partition,
        }
    }

    #[test]
    fn a_failed_message_holds_its_partition_back() {
        let mut offsets = Offsets::default();
        for offset in 10..15 {
            offsets.take(&p(0), offset);
        }
        for offset in [10, 12, 13, 14] {
            offsets.settle(&p(0), offset);
        }
        assert_eq!(offsets.unsettled(), 1);
        assert_eq!(offsets.unsettled_in(&p(0)), 1);
        assert_eq!(offsets.unsettled_in(&p(1)), 0, "never taken");
        assert_eq!(offsets.due(), [(p(0), 11)], "11 is not settled");
        offsets.committed(&p(0), 11);
        assert_eq!(offsets.due(), [], "nothing moved since");
        offsets.settle(&p(0), 11);
        assert_eq!(offsets.due(), [(p(0), 15)]);
        assert_eq!(offsets.unsettled(), 0);
    }

    #[test]
    fn nothing_is_due_before_the_first_settle() {
        let mut offsets = Offsets::default();
        offsets.take(&p(0), 5);
        offsets.take(&p(0), 6);
        assert_eq!(offsets.unsettled_in(&p(0)), 2);
        offsets.settle(&p(0), 6);
        assert_eq!(offsets.due(), [], "5 is where it started, and unsettled");
        assert_eq!(offsets.unsettled_in(&p(0)), 1);
        offsets.settle(&p(0), 5);
        assert_eq!(offsets.due(), [(p(0), 7)]);
    }

    #[test]
    fn partitions_move_on_their_own() {
        let mut offsets = Offsets::default();
        offsets.take(&p(0), 0);
        offsets.take(&p(1), 0);
        offsets.take(&p(1), 1);
        offsets.settle(&p(1), 0);
        offsets.settle(&p(1), 1);
        assert_eq!(offsets.due(), [(p(1), 2)]);
        offsets.settle(&p(0), 0);
        assert_eq!(offsets.due(), [(p(0), 1), (p(1), 2)]);
    }

    #[test]
    fn a_revoked_partition_is_forgotten() {
        let mut offsets = Offsets::default();
        offsets.take(&p(0), 3);
        assert!(offsets.owns(&p(0)));
        offsets.forget(&p(0));
        assert!(!offsets.owns(&p(0)));
        offsets.settle(&p(0), 3);
        offsets.committed(&p(0), 4);
        assert_eq!(offsets.due(), []);
        assert_eq!(offsets.commit_point(&p(0)), None);
    }

    proptest! {
        /// Whatever settles in whatever order, the commit point is the
        /// first offset not settled, and never passes one.
        #[test]
        fn the_commit_point_is_the_first_unsettled_offset(
            settled in proptest::collection::vec(any::<bool>(), 1..40),
            order in any::<u64>(),
        ) {
            let mut offsets = Offsets::default();
            let start = 100;
            for n in 0..settled.len() {
                offsets.take(&p(0), start + n as i64);
            }
            let mut chosen: Vec<i64> = (0..settled.len())
                .filter(|&n| settled[n])
                .map(|n| start + n as i64)
                .collect();
            chosen.sort_by_key(|offset| offset.wrapping_mul(order as i64 | 1));
            for offset in chosen {
                offsets.settle(&p(0), offset);
            }
            let first_unsettled = settled.iter().position(|done| !done);
            let expected = start + first_unsettled.unwrap_or(settled.len()) as i64;
            prop_assert_eq!(offsets.commit_point(&p(0)), Some(expected));
            let due = if expected > start { vec![(p(0), expected)] } else { vec![] };
            prop_assert_eq!(offsets.due(), due);
        }
    }
}
