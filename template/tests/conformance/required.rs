//! The required tests: each required scenario, run for every subject in
//! `support::subjects::all()` and judged against its own model. A consumer
//! added there is judged by every one of them; a failure names the
//! scenario and the consumer. The scenarios are the test kit's
//! (`inbox_kit_testkit::harness::Required` says what each one plays).

use crate::support::harness::{Required, every_subject_passes};
use crate::support::subjects;

fn every_subject(scenario: Required) {
    every_subject_passes(&subjects::all(), scenario);
}

#[test]
fn run_twice() {
    every_subject(Required::RunTwice);
}

#[test]
fn parallel() {
    every_subject(Required::Parallel);
}

#[test]
fn redelivery() {
    every_subject(Required::Redelivery);
}

#[test]
fn restart() {
    every_subject(Required::Restart);
}

#[test]
fn business_key() {
    every_subject(Required::BusinessKey);
}

#[test]
fn exact_ids() {
    every_subject(Required::ExactIds);
}

#[test]
fn failed_commit() {
    every_subject(Required::FailedCommit);
}

#[test]
fn database_faults() {
    every_subject(Required::DatabaseFaults);
}

#[test]
fn rules_across_messages() {
    every_subject(Required::RulesAcrossMessages);
}

#[test]
fn cannot_apply() {
    every_subject(Required::CannotApply);
}

#[test]
fn dead_letters() {
    every_subject(Required::DeadLetters);
}
