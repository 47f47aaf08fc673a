//! The required tests for this consumer's inbox. Each file is one promise:
//!
//! * `run_twice`: the same messages delivered twice apply once;
//! * `parallel`: four workers delivering the same messages at once apply
//!   each once, and none fails on a lock;
//! * `redeliver`: a delivery that fails leaves no trace, and its
//!   redelivery applies it once;
//! * `consumers`: two consumers of one message both apply it, and one event
//!   fans out to every channel;
//! * `restart`: duplicates are still caught after the database is reopened;
//! * `teeth`: every known-broken implementation fails at least one of the
//!   above, so a green run means something.
//!
//! `cargo test run_twice`, `cargo test parallel`, `cargo test redeliver`
//! run one group. `scripts/stress.sh` repeats `parallel` many times.

#[path = "../support/mod.rs"]
mod support;

mod consumers;
mod parallel;
mod redeliver;
mod restart;
mod run_twice;
mod teeth;
