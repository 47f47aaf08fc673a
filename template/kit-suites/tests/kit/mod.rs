//! What only the kit's own suites use, beside the project's `tests/support/`:
//! reading a scrape and the summary lines, running a broker consumer to
//! the end, and the meters that miscount. Each suite's `main.rs` declares
//! this module next to `support`; none uses all of it.
#![allow(dead_code)]

pub mod consume;
pub mod meters;
pub mod metrics;
pub mod summary;
