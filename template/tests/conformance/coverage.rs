//! Coverage: no consumer escapes the required scenarios. Every handler
//! registered in `handlers::all()` has a name of its own (two consumers
//! with one name share their inbox rows) and a subject in
//! `support::subjects::all()`, where `required.rs` runs every required
//! scenario for it.

use {{crate_name}}::handlers;

use crate::support::subjects;

#[test]
fn every_registered_consumer_has_a_name_of_its_own() {
    handlers::check(&handlers::all()).unwrap_or_else(|error| panic!("violation: {error}"));
}

#[test]
fn every_registered_consumer_has_a_subject() {
    let covered: Vec<&str> = subjects::all().iter().map(|s| s.consumer()).collect();
    for handler in handlers::all() {
        assert!(
            covered.contains(&handler.consumer()),
            "consumer `{}` is registered in handlers::all() but has no subject in \
             tests/support/subjects.rs (add one to subjects::all(): see /add-handler)",
            handler.consumer()
        );
    }
}
