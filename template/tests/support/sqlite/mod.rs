//! The harness's database when this project runs on SQLite: every fixture
//! is a fresh file in a temporary folder.

pub mod bench;
mod fixture;
mod raw;
pub mod traps;

pub use fixture::{Fixture, Scratch, scratch_folder};
pub use raw::SqliteRaw;
