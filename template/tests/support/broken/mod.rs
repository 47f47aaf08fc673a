//! Known-broken implementations, kept so the tests can prove they catch
//! them. Each one is a mistake that looks right in review; the comment on
//! each says which scenario catches it and why. The broken inboxes,
//! sources and routes are the test kit's (`inbox_kit_testkit::broken`,
//! re-exported here, with `Trap` and `WithSchema`, the shapes of a trap);
//! the traps only one database has live in its own support module. None
//! of this is ever used by the consumer itself. Here:
//!
//! * `handlers`: this project's handlers doing the wrong thing.

mod handlers;

pub use handlers::*;
pub use inbox_kit_testkit::broken::*;
