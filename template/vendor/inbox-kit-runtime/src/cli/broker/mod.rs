//! What the project's broker adds to the commands (one broker feature at
//! a time; `kafka` wins over `nats`): `consume`, deliveries from the
//! broker through the pipeline (`ConsumeArgs`), and where `relay send`
//! sends notifications ([`SinkOptions`]). Without a broker there is no
//! `consume`, and the relay writes JSON lines.

#[cfg(feature = "kafka")]
mod kafka;
#[cfg(all(feature = "nats", not(feature = "kafka")))]
mod nats;
#[cfg(not(any(feature = "nats", feature = "kafka")))]
mod none;

#[cfg(feature = "kafka")]
pub use kafka::{ConsumeArgs, SinkOptions, consume};
#[cfg(all(feature = "nats", not(feature = "kafka")))]
pub use nats::{ConsumeArgs, SinkOptions, consume};
#[cfg(not(any(feature = "nats", feature = "kafka")))]
pub use none::SinkOptions;
