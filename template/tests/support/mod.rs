//! Test support: the conformance harness, the example handlers as test
//! subjects, and known-broken implementations that the tests must catch.
//!
//! Everything here is written once for every database, except the
//! `database` module: this project's database behind the harness (fresh
//! databases, the raw steps broken inboxes are made of, and the traps only
//! that database has).
//!
//! What knows nothing of this project (holding a process at its progress,
//! cutting a connection, a stand-in OpenTelemetry collector) is the kit's
//! test-kit crate (`vendor/inbox-kit-testkit/`), re-exported here under the
//! paths the tests name.
//!
//! Shared by the integration tests, `examples/demo.rs` and the benchmark,
//! and never compiled into the consumer binary. The kit runs its own suites
//! (crash-kill, schedules, fuzz, faults, the relay, the brokers end to end)
//! on this module too, against its copy of this project's examples: they
//! test the kit's code, so they live in the kit, not here. Each of them uses only part
//! of it, hence the allowances for unused items and re-exports.
#![allow(dead_code, unused_imports)]

pub mod broken;
pub mod debit_variant;
pub mod harness;
{%- if broker == "kafka" %}
pub mod kafka;
{%- endif %}
{%- if broker == "nats" %}
pub mod nats;
{%- endif %}
pub mod relay_rates;
pub mod subjects;
pub mod workload;

pub use inbox_kit_testkit::{collector, kill, proxy, traces};
{% if database == "postgres" %}
#[path = "postgres/mod.rs"]
pub mod database;
{%- else %}
#[path = "sqlite/mod.rs"]
pub mod database;
{%- endif %}
