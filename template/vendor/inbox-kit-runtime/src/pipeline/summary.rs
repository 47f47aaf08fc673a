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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_add_field_by_field_and_print_every_count() {
        let mut total = Summary {
            applied: 1,
            duplicate: 2,
            failed: 3,
            rejected: 4,
            dead_lettered: 5,
            refused: 6,
        };
        total += Summary {
            applied: 10,
            duplicate: 20,
            failed: 30,
            rejected: 40,
            dead_lettered: 50,
            refused: 60,
        };
        assert_eq!(
            total.to_string(),
            "applied=11 duplicate=22 failed=33 rejected=44 dead_lettered=55 refused=66"
        );
    }

    #[test]
    fn each_outcome_counts_under_its_own_name() {
        let mut summary = Summary::default();
        for outcome in [
            Outcome::Applied,
            Outcome::Duplicate,
            Outcome::Duplicate,
            Outcome::Failed("x".into()),
            Outcome::DeadLettered("y".into()),
            Outcome::Refused("z".into()),
        ] {
            summary.count(&outcome);
        }
        assert_eq!(
            summary.to_string(),
            "applied=1 duplicate=2 failed=1 rejected=0 dead_lettered=1 refused=1"
        );
    }
}
