//! The harness's database when this project runs on PostgreSQL: every
//! fixture is an emptied schema of a pool on the server named by
//! `DATABASE_URL`, one per fixture alive, so tests run in parallel without
//! seeing each other.

pub mod bench;
mod fixture;
mod harness;
mod locks;
mod raw;
pub mod traps;
mod tripwires;

pub use fixture::{Fixture, SLOT_TABLE_BYTES, Scratch, application, server_url};
pub use locks::{LOCK_WAIT_EVIDENCE, describe_waits};
pub use raw::PgRaw;
pub use tripwires::{CONCURRENT_WRITERS, ClaimHolder, Conflicts};
