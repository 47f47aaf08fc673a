//! The benchmarks' databases (`Fixture::without_tripwires`) are the
//! consumer's own schema: none of the tests' tripwires is left in them, or
//! the benchmarks would time the triggers. And dropping them never reaches
//! a test's database, or the fault tests would pass without their faults.

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

#[test]
fn a_benchmark_database_has_no_tripwire_and_the_next_test_database_has_them() {
    let benchmark = Fixture::without_tripwires();
    assert_eq!(
        deliver_refused_claim(&benchmark).expect("no tripwire to refuse the claim"),
        [Outcome::Applied],
        "a tripwire was left in a benchmark's database"
    );
    drop(benchmark);
    let test = Fixture::new();
    let outcome = deliver_refused_claim(&test);
    assert!(
        !matches!(outcome.as_deref(), Ok([Outcome::Applied])),
        "a test's database lost its claim tripwire: {outcome:?}"
    );
}
