//! Counting what happened during a run.

use std::fmt;
use std::ops::AddAssign;

use crate::inbox::Outcome;

/// Outcome counts. `applied`, `duplicate` and `failed` count deliveries (one
/// message to one consumer); `rejected` counts input lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub applied: u64,
    pub duplicate: u64,
    pub failed: u64,
    pub rejected: u64,
}

impl Summary {
    pub fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Applied => self.applied += 1,
            Outcome::Duplicate => self.duplicate += 1,
            Outcome::Failed(_) => self.failed += 1,
        }
    }
}

impl AddAssign for Summary {
    fn add_assign(&mut self, other: Self) {
        self.applied += other.applied;
        self.duplicate += other.duplicate;
        self.failed += other.failed;
        self.rejected += other.rejected;
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "applied={} duplicate={} failed={} rejected={}",
            self.applied, self.duplicate, self.failed, self.rejected
        )
    }
}
