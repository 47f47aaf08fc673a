//! Where deliveries come from, and how each one is settled.
//!
//! A [`Source`] reads messages and hands them to the pipeline in chunks.
//! Each carries an [`Acknowledge`] handle, and the pipeline settles every
//! message only after the transaction holding its deliveries returned:
//!
//! | what happened to the message's deliveries | [`Verdict`] | a broker is told |
//! |---|---|---|
//! | all applied or duplicates | `Done` | acknowledge: forget the message |
//! | one failed (rolled back, attempt counted) | `Retry` | redeliver it later |
//! | one was dead-lettered | `Parked` | stop delivering it |
//! | the database failed (nothing committed) | `Abandoned` | nothing: it redelivers on its own |
//!
//! Settling after the commit is what makes the inbox effectively-once: a
//! crash between the two leaves a committed message unacknowledged, and its
//! redelivery is a duplicate.
//!
//! Every source is generic over the project's events (`E`, read through
//! [`crate::envelope::Wire`]): a file of JSON lines, [`lines`], which every
//! project has, and one module per broker, each a feature of this crate
//! that says how its broker is told. JetStream settles each message on its
//! own (`nats`); Kafka keeps one committed offset per partition, so its
//! source commits the contiguous prefix of settled offsets and retries a
//! failed message itself (`kafka`, with `crate::offsets`).

#[cfg(feature = "kafka")]
pub mod kafka;
pub mod lines;
#[cfg(feature = "nats")]
pub mod nats;

use std::time::Duration;

use crossbeam_channel::Sender;

use crate::message::Message;
pub use crate::stop::Stop;

/// One message from a source, with the handle that settles it.
pub struct Incoming<E> {
    pub message: Message<E>,
    /// How many times the source has delivered this message (1 the first
    /// time). A broker counts redeliveries even when a crash kept the inbox
    /// from counting the attempt; a file source always says 1.
    pub delivered: u32,
    pub ack: Box<dyn Acknowledge>,
}

/// What became of a message, once its transaction returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every delivery applied or was a duplicate: acknowledge it.
    Done,
    /// A delivery failed and was rolled back: deliver it again later.
    Retry,
    /// A delivery was dead-lettered: never deliver it again.
    Parked,
    /// The database failed and nothing was committed: leave the message to
    /// the source's own redelivery.
    Abandoned,
}

/// Settles one message.
pub trait Acknowledge: Send {
    /// Called once, after the transaction holding the message's deliveries
    /// returned.
    fn settle(self: Box<Self>, verdict: Verdict);
}

/// What a source's broker says about this consumer, asked afresh by each
/// metrics scrape and readiness check. A source without a broker (a file)
/// has none.
pub trait BrokerProbe: Send + Sync {
    /// Messages the broker holds for this consumer and has not had
    /// acknowledged: not yet delivered, or delivered and unsettled. An
    /// error says why the broker cannot be asked now. Blocks, for a few
    /// seconds at most.
    fn pending(&self) -> Result<u64, String>;
}

/// Somewhere messages of events `E` come from.
pub trait Source<E>: Send {
    /// Reads messages and sends them in chunks until the input ends or
    /// `stop` is raised. Runs on a thread of its own, where it may block.
    /// Returns how many inputs it rejected (they never reach a consumer).
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming<E>>>, stop: &Stop) -> anyhow::Result<u64>;
}

/// How long a failed message waits before its redelivery (a broker's
/// redelivery, or the source's own retry): 1 s after the first delivery,
/// doubling up to a minute.
pub fn retry_delay(delivered: u32) -> Duration {
    Duration::from_secs(1 << delivered.saturating_sub(1).min(6)).min(Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_longer_each_time_up_to_a_minute() {
        let delays: Vec<u64> = (0..=9).map(|n| retry_delay(n).as_secs()).collect();
        assert_eq!(delays, [1, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
