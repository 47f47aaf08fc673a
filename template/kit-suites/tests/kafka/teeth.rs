//! Proof that the Kafka tests catch the known-broken sources: each is run
//! through the scenario about its mistake, which must find the end state
//! wrong, every run. (The same scenarios pass with the real source, in
//! `duplicates` and `offsets`.)

use crate::SourceKind;
use crate::broken::{MISTAKES, Mistake};
use crate::duplicates::published_twice;
use crate::offsets::failing_message_across_a_restart;

/// The scenario that judges `mistake`'s end state.
fn problems_with(mistake: Mistake) -> Vec<String> {
    let kind = SourceKind::Broken(mistake);
    match mistake {
        Mistake::CommitBeforeDatabase | Mistake::CommitHighestSettled => {
            failing_message_across_a_restart(kind)
        }
        Mistake::IdFromOffset => published_twice(kind).1,
    }
}

#[test]
fn every_broken_source_is_caught() {
    for mistake in MISTAKES {
        let problems = problems_with(mistake);
        println!("{mistake:?}: {}", problems.join("; "));
        assert!(!problems.is_empty(), "{mistake:?} was not caught");
    }
}
