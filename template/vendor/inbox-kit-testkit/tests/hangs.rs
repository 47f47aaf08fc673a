//! The hang watchdog, end to end: a test that waits forever is ended as a
//! failure within its limit, with a report that names the test, its
//! scenario, what it waited for and what the database said.

use inbox_kit_testkit::harness::hangs;

/// The hang limit of the run alone, in seconds.
const LIMIT_SECS: u64 = 1;

#[test]
#[ignore = "hangs on purpose: run in a process of its own by the test after it"]
fn exhibit_a_wait_that_never_ends() {
    hangs::describe_the_database_with(|| vec!["session 7 held by session 8".to_owned()]);
    let _scenario = hangs::scenario("waiting forever, for `debit`");
    let _waiting = hangs::waiting("a delivery that never ends");
    loop {
        std::thread::park();
    }
}

#[test]
fn a_wait_past_its_limit_fails_the_test_naming_what_it_waited_for() {
    let name = "exhibit_a_wait_that_never_ends";
    let run = hangs::run_alone(name, LIMIT_SECS);
    run.assert_hung(
        name,
        LIMIT_SECS,
        "waiting forever, for `debit`",
        "a delivery that never ends",
    );
    run.assert_lock_holder_named(Some("held by session 8"));
    assert!(
        run.stdout
            .contains("The database:\n  - session 7 held by session 8\n"),
        "{}",
        run.stdout
    );
}
