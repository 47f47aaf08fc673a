//! The test kit of an inbox-kit consumer: the parts of its test support
//! that know nothing of the consumer, its database or its broker. A
//! generated project uses it as a dev-dependency and re-exports each module
//! under its old path (`crate::support::kill`...), so its tests read the
//! same whether a helper lives here or there.
//!
//! * [`bench`](mod@bench): the figures benchmarks print (medians, rates with
//!   thousands separators, the consume rows);
//! * [`kill`]: a process held at one of its own progress lines, then
//!   killed or signalled there, so every kill lands mid-run on any machine;
//!   and a child that is killed with the test that started it;
//! * [`proxy`]: a TCP proxy on loopback that a test cuts and restores, to
//!   take a server away from a consumer without touching the server;
//! * [`collector`]: a stand-in OpenTelemetry collector that keeps what was
//!   exported to it;
//! * [`traces`]: spans recorded in memory through the layer a consumer's
//!   `--otlp-endpoint` installs, and the check that a trace follows a
//!   message from its producer to the relay's receiver;
//! * [`nats`]: a NATS server of a test's own, and a proxy that watches and
//!   withholds a consumer's settles;
//! * [`kafka`]: a Kafka-compatible broker (tansu) of a test's own;
//! * [`harness`]: a consumer's conformance harness, whatever its database:
//!   the contract of a handler under test, the judge, the required
//!   scenarios and what they deliver through;
//! * [`broken`]: known-broken inboxes, which those scenarios must catch;
//! * [`teeth`]: the proof that they do, played for a project's subject;
//! * `sqlite` (feature `sqlite`): the fixture of a project on SQLite, a
//!   database file per scenario with the faults it sets off on demand.

pub mod bench;
pub mod broken;
pub mod collector;
pub mod harness;
pub mod kafka;
pub mod kill;
pub mod nats;
pub mod proxy;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod teeth;
pub mod traces;
