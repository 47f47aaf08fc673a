//! The test fixture of a project on SQLite (feature `sqlite`): a fresh
//! database file per scenario with the runtime's inbox tables and the
//! project's own, the faults it sets off on demand (a failed COMMIT, a
//! refused or held claim, an impatient inbox), and the raw connection
//! hand-written inboxes use, and the broken designs only SQLite makes
//! possible (`traps`). A project names it as its `Project::Fixture`
//! (`SqliteFixture<ThisProject>`); what only its own tables can do (a
//! tripwire on one handler's statement, a broken unique key) stays in the
//! project.

mod fixture;
mod raw;
mod statements;
pub mod traps;
mod tripwires;

pub use fixture::{Outage, Scratch, SqliteFixture, SqliteTest, scratch_folder};
pub use raw::SqliteRaw;
pub use tripwires::{CONCURRENT_WRITERS, ClaimHolder};
