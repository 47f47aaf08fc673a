//! The teeth of the required scenarios: every known-broken implementation
//! of this kit ([`crate::broken`]) is caught by the scenario aimed at it,
//! on every run, and passes the scenarios it is known to pass (which shows
//! why every kind of scenario carries weight: check-then-act passes run
//! twice and is caught only in parallel).
//!
//! Written once for any project: a project's own teeth test calls
//! [`assert_every_tooth_bites`] with one subject of its own, so the proof
//! runs against its database, its inbox and its handlers. What only a
//! project can break (its handlers, its tables' keys, its database's
//! traps) stays in the project's teeth.

use crate::broken::*;
use crate::harness::scenarios::*;
use crate::harness::{InboxUnderTest, Subject, Violation};

/// One known-broken implementation and how the scenarios judge it.
pub struct Tooth<S> {
    /// The mistake, as a reviewer would name it.
    pub name: &'static str,
    /// Plays what it passes and what must catch it; `Err` says which
    /// expectation did not hold.
    pub bite: fn(&S) -> Result<(), String>,
}

/// Every tooth of the kit, for a subject whose facts all apply once their
/// seed is there (no refusals: `debit` in the shipped project).
pub fn teeth<S: Subject>() -> Vec<Tooth<S>> {
    vec![
        Tooth {
            name: "no inbox",
            bite: |s| caught(run_twice(s, &NoInbox, 50), "run twice"),
        },
        Tooth {
            name: "check-then-act",
            bite: |s| {
                passes(run_twice(s, &CheckThenAct, 50), "run twice")?;
                caught(parallel(s, &CheckThenAct, 4, 50), "parallel")
            },
        },
        Tooth {
            name: "the id recorded before the update",
            bite: |s| {
                passes(run_twice(s, &RecordFirst, 50), "run twice")?;
                passes(parallel(s, &RecordFirst, 4, 50), "parallel")?;
                caught(
                    redeliver_after_failure(s, &RecordFirst, 1, |_| true),
                    "redelivery",
                )
            },
        },
        Tooth {
            name: "an id minted on receipt",
            bite: |s| caught(run_twice(s, &MintedId, 50), "run twice"),
        },
        Tooth {
            name: "ids remembered in memory",
            bite: |s| {
                passes(run_twice(s, &RemembersInMemory, 50), "run twice")?;
                passes(parallel(s, &RemembersInMemory, 4, 50), "parallel")?;
                passes(
                    redeliver_after_failure(s, &RemembersInMemory, 10, |n| n % 2 == 0),
                    "redelivery",
                )?;
                caught(restart(s, &RemembersInMemory, 50), "restart")
            },
        },
        Tooth {
            name: "ids folded, trimmed, normalized or truncated",
            bite: |s| {
                let inboxes: [&dyn InboxUnderTest<S::Project>; 4] =
                    [&FoldsCase, &TrimsIds, &NormalizesIds, &TruncatesIds];
                for inbox in inboxes {
                    passes(run_twice(s, inbox, 50), "run twice")?;
                    caught(exact_ids(s, inbox), "exact ids")?;
                }
                Ok(())
            },
        },
        Tooth {
            name: "a failed commit reported as applied",
            bite: |s| {
                passes(run_twice(s, &IgnoresFailedCommit, 50), "run twice")?;
                passes(parallel(s, &IgnoresFailedCommit, 4, 50), "parallel")?;
                caught(failed_commit(s, &IgnoresFailedCommit, 20), "failed commit")
            },
        },
        Tooth {
            name: "purges that delete what they must keep",
            bite: |s| {
                for purge in all_purges::<S::Project>() {
                    caught(purge_edge(s, purge.as_ref(), 10), "the purge's edge")?;
                }
                Ok(())
            },
        },
        Tooth {
            name: "dead letters mishandled",
            bite: |s| {
                for letters in all_letters::<S::Project>() {
                    caught(dead_letters(s, letters.as_ref()), "dead letters")?;
                }
                Ok(())
            },
        },
        Tooth {
            name: "deliveries miscounted",
            bite: |s| {
                for letters in delivery_count_mistakes::<S::Project>() {
                    caught(crash_loop(s, letters.as_ref()), "the crash loop")?;
                }
                Ok(())
            },
        },
        Tooth {
            name: "a storage fault held against the message",
            bite: |s| {
                let inboxes: [&dyn InboxUnderTest<S::Project>; 2] = [&FaultCounted, &FaultRefused];
                for inbox in inboxes {
                    passes(run_twice(s, inbox, 50), "run twice")?;
                    caught(storage_fault_in_handler(s, inbox, 10), "a storage fault")?;
                }
                Ok(())
            },
        },
        Tooth {
            name: "a lock timeout taken as a duplicate",
            bite: |s| {
                caught(
                    claim_held_elsewhere(s, &LockTimeoutAsDuplicate, 5),
                    "a held claim",
                )
            },
        },
        Tooth {
            name: "a claim error taken as a duplicate",
            bite: |s| {
                passes(run_twice(s, &ClaimErrorAsDuplicate, 50), "run twice")?;
                caught(
                    claim_refused(s, &ClaimErrorAsDuplicate, 5),
                    "a refused claim",
                )
            },
        },
        Tooth {
            name: "a set-based run whose failure is handled wrong",
            bite: |s| {
                let inboxes: [&dyn InboxUnderTest<S::Project>; 2] =
                    [&NoFallback, &FallbackKeepsTheAttempt];
                for inbox in inboxes {
                    passes(run_twice(s, inbox, 50), "run twice")?;
                    caught(
                        redeliver_after_failure(s, inbox, 10, |n| n == 3),
                        "redelivery",
                    )?;
                }
                Ok(())
            },
        },
        Tooth {
            name: "a message settled before its commit",
            bite: |s| {
                caught(
                    through_the_pipeline(s, &SettlesOnReceipt, real_route::<S::Project>()),
                    "the pipeline",
                )
            },
        },
    ]
}

/// Plays every tooth of [`teeth`] for `subject`, one after another, and
/// panics naming each one whose expectations did not hold. Prints each
/// verdict, so `--nocapture` shows what caught what.
pub fn assert_every_tooth_bites<S: Subject>(subject: &S) {
    let blunt: Vec<String> = teeth::<S>()
        .into_iter()
        .filter_map(|tooth| match (tooth.bite)(subject) {
            Ok(()) => None,
            Err(why) => Some(format!("{}: {why}", tooth.name)),
        })
        .collect();
    assert!(
        blunt.is_empty(),
        "known-broken implementations not caught as they must be:\n{}",
        blunt.join("\n")
    );
}

/// `Ok` if `scenario` caught the broken implementation.
fn caught<T>(verdict: Result<T, Violation>, scenario: &str) -> Result<(), String> {
    match verdict {
        Ok(_) => Err(format!("not caught by {scenario}")),
        Err(violation) => {
            println!("caught by {scenario}: {violation}");
            Ok(())
        }
    }
}

/// `Ok` if the broken implementation passed `scenario`, as it is known to.
fn passes<T>(verdict: Result<T, Violation>, scenario: &str) -> Result<(), String> {
    verdict
        .map(drop)
        .map_err(|violation| format!("should pass {scenario}: {violation}"))
}
