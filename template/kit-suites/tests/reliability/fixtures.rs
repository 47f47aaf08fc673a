//! The benchmarks' databases (`Fixture::without_tripwires`) are the
//! consumer's own schema: no tripwire trigger is in them, or the
//! benchmarks would time the triggers. And what keeps them out never
//! reaches a test's database, or the fault tests would pass without their
//! faults: a tripwire armed after a benchmark's database still trips.

use {{crate_name}}::handlers::Debit;
use {{crate_name}}::inbox::{Delivery, Outcome, Policy, StorageError};

use crate::support::database::Fixture;
use crate::support::harness::Seed;
use crate::support::subjects::{DebitSubject, payments};

/// Delivers one payment on `fixture` once the claim tripwire was told to
/// refuse its inbox row.
fn deliver_refused_claim(fixture: &Fixture) -> Result<Vec<Outcome>, StorageError> {
    let subject = DebitSubject::real();
    let message = &payments(1)[0];
    fixture.with_tables(|tables| subject.seed_tables(tables));
    fixture.refuse_claims(&[message.id.as_str()]);
    let mut inbox = fixture.inbox(Policy::default());
    inbox.deliver_batch(&[Delivery::new(&Debit, message)])
}

/// A benchmark's database, checked to hold no tripwire trigger.
fn benchmark_database() -> Fixture {
    let benchmark = Fixture::without_tripwires();
    assert_eq!(
        benchmark.tripwire_triggers(),
        0,
        "a tripwire trigger in a benchmark's database: the benchmark would time it"
    );
    benchmark
}

#[test]
fn a_benchmark_database_has_no_tripwire_and_a_test_database_still_trips() {
    drop(benchmark_database());
    let test = Fixture::new();
    let outcome = deliver_refused_claim(&test);
    assert!(
        !matches!(outcome.as_deref(), Ok([Outcome::Applied])),
        "a test's database lost its claim tripwire: {outcome:?}"
    );
    drop(test);
    // The database after a test that armed a tripwire (on PostgreSQL the
    // same schema, reset) is clean again.
    drop(benchmark_database());
}
