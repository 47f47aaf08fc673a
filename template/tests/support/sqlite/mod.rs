//! The harness's database when this project runs on SQLite: every fixture
//! is a fresh file in a temporary folder, the test kit's
//! (`inbox_kit_testkit::sqlite`), with what only this project's tables
//! have: `debit`'s statement tripwire, and the traps of broken keys.

pub mod bench;
mod debit_tripwire;
pub mod traps;

pub use inbox_kit_testkit::sqlite::{
    CONCURRENT_WRITERS, ClaimHolder, Scratch, SqliteRaw, scratch_folder,
};

use crate::support::harness::ThisProject;

/// A fresh database with every table, for one scenario.
pub type Fixture = inbox_kit_testkit::sqlite::SqliteFixture<ThisProject>;

/// What a hang report says of a claim waiting for its own transaction's
/// lock: nothing more than the delivery in flight, on SQLite, where a
/// connection waiting for the write lock shows only as a delivery in
/// flight (the report's list of waits), so nothing describes the
/// database to the hang watchdog.
pub const LOCK_WAIT_EVIDENCE: Option<&str> = None;
