//! Test support: the conformance harness, the example handlers as test
//! subjects, and known-broken implementations that the tests must catch.
//!
//! Shared by the integration tests, `examples/demo.rs` and the benchmark,
//! and never compiled into the consumer binary. Each user compiles only
//! the parts it needs, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod broken;
pub mod harness;
pub mod subjects;
