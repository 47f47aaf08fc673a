//! NATS for tests: a server of a test's own ([`server`]), and a proxy that
//! watches and withholds a consumer's settles ([`proxy`]). Neither needs a
//! NATS client: both speak to the process or the socket.

pub mod proxy;
pub mod server;
