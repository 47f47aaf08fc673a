//! The required delivery schedules, one file each, written for any
//! project's subjects. Every scenario has a `play_` form that runs it and
//! returns a [`Play`](super::Play) of what it left behind, and a judged
//! form of the same name without `play_` that returns that play once it
//! passed, or the [`Violation`](super::Violation) that says what went
//! wrong.

mod business_key;
mod cannot_apply;
mod commit;
mod consumers;
mod ids;
mod parallel;
mod pipeline;
mod poison;
mod process;
mod redelivery;
mod required;
mod restart;
mod retention;
mod serial;
mod serve;
mod statements;
mod storage;
mod twice;

pub use business_key::*;
pub use cannot_apply::*;
pub use commit::*;
pub use consumers::*;
pub use ids::*;
pub use parallel::*;
pub use pipeline::*;
pub use poison::*;
pub use process::SECOND_PROCESS_TEST;
pub use redelivery::*;
pub use required::*;
pub use restart::*;
pub use retention::*;
pub use serial::*;
pub use serve::serve_second_process;
pub use statements::*;
pub use storage::*;
pub use twice::*;
