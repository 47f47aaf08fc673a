//! Counting what happened during a run.

use std::fmt;
use std::ops::AddAssign;

use crate::inbox::Outcome;

/// Outcome counts. `applied`, `duplicate`, `failed`, `dead_lettered` and
/// `refused` count deliveries (one message to one consumer); `rejected`
/// counts input lines that were not messages at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub applied: u64,
    pub duplicate: u64,
    pub failed: u64,
    pub rejected: u64,
    pub dead_lettered: u64,
    pub refused: u64,
}

impl Summary {
    pub fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Applied => self.applied += 1,
            Outcome::Duplicate => self.duplicate += 1,
            Outcome::Failed(_) => self.failed += 1,
            Outcome::DeadLettered(_) => self.dead_lettered += 1,
            Outcome::Refused(_) => self.refused += 1,
        }
    }
}

impl AddAssign for Summary {
    fn add_assign(&mut self, other: Self) {
        self.applied += other.applied;
        self.duplicate += other.duplicate;
        self.failed += other.failed;
        self.rejected += other.rejected;
        self.dead_lettered += other.dead_lettered;
        self.refused += other.refused;
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "applied={} duplicate={} failed={} rejected={} dead_lettered={} refused={}",
            self.applied,
            self.duplicate,
            self.failed,
            self.rejected,
            self.dead_lettered,
            self.refused
        )
    }
}
