//! The harness's database when this project runs on PostgreSQL: every
//! fixture is a fresh schema on the server named by `DATABASE_URL`, dropped
//! afterwards, so tests run in parallel without seeing each other.

pub mod bench;
mod fixture;
mod raw;
pub mod traps;

pub use fixture::{Fixture, Scratch, server_url};
pub use raw::PgRaw;
