//! The required tests. `required.rs` runs each required scenario (run
//! twice, 4 workers in parallel, failure then redelivery, restart,
//! business key, exact ids, failed commit, database faults, rules across
//! messages, cannot apply, dead letters) for every subject in
//! `support::subjects::all()`, judged against the subject's own model and
//! against each message applied once to a fresh database: a consumer added
//! there is judged by all of them, and a failure names the scenario and the
//! consumer. Besides them:
//!
//! * `coverage`: every registered consumer has a subject and a name of its
//!   own;
//! * `teeth`: every known-broken implementation fails the scenario aimed at
//!   it, so a green run means something;
//! * `restart`: the second process of the scenarios that need one.
//!
//! `cargo test --test conformance required` runs the required tests,
//! `cargo test --test conformance required::parallel` one of them;
//! `scripts/stress.sh` repeats `required::parallel` many times.

#[path = "../support/mod.rs"]
mod support;

mod coverage;
mod required;
mod restart;
mod teeth;
