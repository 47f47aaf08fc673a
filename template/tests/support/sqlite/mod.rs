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
