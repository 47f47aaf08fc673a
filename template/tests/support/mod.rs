//! Test support: the conformance harness, the example handlers as test
//! subjects, and known-broken implementations that the tests must catch.
//!
//! Shared by the integration tests, `examples/demo.rs` and the benchmark,
//! and never compiled into the consumer binary. Each of them uses only part
//! of it, hence the allowances for unused items and re-exports.
#![allow(dead_code, unused_imports)]

pub mod broken;
pub mod harness;
pub mod subjects;
