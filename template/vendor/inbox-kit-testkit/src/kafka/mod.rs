//! Kafka for tests: a Kafka-compatible broker of a test's own
//! ([`server`]: tansu), started and stopped by the test.

pub mod server;
