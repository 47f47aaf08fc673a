//! How the broker tests run a consumer, written once for every broker: in
//! this process (the pipeline with the tests' options, on a fixture's real
//! inbox), or as the `consume` command, stopped by SIGTERM once the broker
//! says it is through.

use std::process::{Command, Stdio};

use {{crate_name}}::database::Database;
use {{crate_name}}::inbox::{Policy, StorageError};
use {{crate_name}}::pipeline::{Options, PROGRESS_LINE};
use {{crate_name}}::store::Store;

use crate::support::database::Fixture;
use crate::support::kill::{Running, stop_and_collect};

/// An in-process consumer's pipeline: four workers and small batches, so
/// that a few hundred messages make many transactions and the workers
/// overlap.
pub fn in_process_options() -> Options {
    Options {
        workers: 4,
        batch_size: 16,
        ..Options::default()
    }
}

/// The real inbox of `fixture`'s database, as each worker opens it.
pub fn real_inbox(
    fixture: &Fixture,
    policy: Policy,
) -> impl Fn() -> Result<<Database as Store>::Inbox, StorageError> + Send + Sync + 'static {
    let database = fixture.database();
    move || database.inbox(policy)
}

/// Starts `consume` (`command`), waits until `through` (the broker's own
/// count, asked by the test) says it has worked through everything, then
/// stops it with SIGTERM and returns its summary line. Panics, with what
/// it printed, if `through` gave up or the process did not exit 0.
pub fn consume_to_the_end(mut command: Command, through: impl FnOnce() -> bool) -> String {
    let child = Running::start(command.stdout(Stdio::piped()).stderr(Stdio::piped()));
    let finished = through();
    let ended = stop_and_collect(child, PROGRESS_LINE, libc::SIGTERM);
    assert!(
        finished,
        "consume did not work through what the broker holds:\n{}",
        ended.other_output
    );
    assert!(
        ended.status.success(),
        "consume ended with {}:\n{}",
        ended.status,
        ended.other_output
    );
    ended.stdout
}
