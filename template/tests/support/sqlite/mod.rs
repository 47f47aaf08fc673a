//! The harness's database when this project runs on SQLite: every fixture
//! is a fresh file in a temporary folder.

pub mod bench;
mod fixture;
mod raw;
pub mod traps;
mod tripwires;

pub use fixture::{Fixture, Scratch, scratch_folder};
pub use raw::SqliteRaw;
pub use tripwires::{CONCURRENT_WRITERS, ClaimHolder, Conflicts};

/// What a hang report says of a claim waiting for its own transaction's
/// lock: nothing more than the delivery in flight, on SQLite, where a
/// connection waiting for the write lock shows only as a delivery in
/// flight (the report's list of waits), so nothing describes the
/// database to the hang watchdog.
pub const LOCK_WAIT_EVIDENCE: Option<&str> = None;
