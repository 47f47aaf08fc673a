//! The delivery schedule that needs more of this project than the test
//! kit's `Fixture` names: `debit`'s statements failing inside a batch
//! (`statements`). Every other required scenario, and all of them
//! together (`required_scenarios`), is the test kit's
//! (`inbox_kit_testkit::harness::scenarios`), re-exported here. Every scenario has a `play_` form that runs it and returns a
//! [`Play`](super::Play) of what it left behind, and a judged form of the
//! same name without `play_` that returns that play once it passed, or the
//! [`Violation`](super::Violation) that says what went wrong.

mod statements;

pub use inbox_kit_testkit::harness::scenarios::*;
pub use statements::*;
