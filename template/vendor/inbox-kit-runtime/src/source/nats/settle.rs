//! The task that sends settled messages' acknowledgements, and keeps the
//! ones still in flight alive.
//!
//! Workers settle messages on their own threads; the acknowledgements are
//! sent from here, each awaiting the server's confirmation, many at once,
//! so that a batch of hundreds costs about one round trip.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::AckKind;
use async_nats::jetstream::message::Acker;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use super::{Counts, InFlight, Outbox};
use crate::source::{Verdict, retry_delay};

/// Acknowledgements still being sent; [`Settled::finish`] waits for them.
pub struct Settled {
    task: JoinHandle<()>,
}

impl Settled {
    /// Waits until every settled message's acknowledgement was sent (call
    /// it after the pipeline returned).
    pub async fn finish(self) {
        if let Err(error) = self.task.await {
            tracing::error!(%error, "the acknowledging task failed");
        }
    }
}

/// Starts the task. `ack_wait` is the consumer's: messages still in flight
/// after a third of it get a `Progress`, which restarts their ack wait.
pub(super) fn start(
    client: async_nats::Client,
    ack_wait: Duration,
    counts: Arc<Counts>,
) -> (Outbox, Settled) {
    let (settle, mut settled) = mpsc::unbounded_channel();
    let in_flight: Arc<Mutex<HashMap<u64, InFlight>>> = Arc::default();
    let outbox = Outbox {
        settle,
        in_flight: in_flight.clone(),
    };
    let task = tokio::spawn(async move {
        let mut sending = JoinSet::new();
        let every = ack_wait / 3;
        let mut ticker = tokio::time::interval(every);
        loop {
            tokio::select! {
                next = settled.recv() => match next {
                    Some((acker, verdict, delivered)) => {
                        sending.spawn(acknowledge(acker, verdict, delivered, counts.clone()));
                    }
                    None => break,
                },
                _ = ticker.tick() => keep_alive(&client, &in_flight, every).await,
                Some(_) = sending.join_next(), if !sending.is_empty() => {}
            }
        }
        while sending.join_next().await.is_some() {}
    });
    (outbox, Settled { task })
}

/// Tells the broker what became of one message, and waits for it to
/// confirm.
async fn acknowledge(acker: Acker, verdict: Verdict, delivered: u32, counts: Arc<Counts>) {
    let (kind, count) = match verdict {
        Verdict::Done => (AckKind::Ack, &counts.acknowledged),
        Verdict::Retry => (AckKind::Nak(Some(retry_delay(delivered))), &counts.retried),
        Verdict::Parked => (AckKind::Term, &counts.terminated),
        Verdict::Abandoned => return,
    };
    match acker.double_ack_with(kind).await {
        Ok(()) => {
            count.fetch_add(1, Ordering::Relaxed);
        }
        Err(error) => {
            counts.unconfirmed.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%error, "acknowledgement not confirmed; the message will come again, as a duplicate");
        }
    }
}

/// Sends `Progress` for every message in flight for longer than `after`.
async fn keep_alive(
    client: &async_nats::Client,
    in_flight: &Mutex<HashMap<u64, InFlight>>,
    after: Duration,
) {
    let due: Vec<async_nats::Subject> = {
        let Ok(mut in_flight) = in_flight.lock() else {
            return;
        };
        in_flight
            .values_mut()
            .filter(|message| message.since.elapsed() >= after)
            .map(|message| {
                message.since = Instant::now();
                message.reply.clone()
            })
            .collect()
    };
    for reply in due {
        if let Err(error) = client.publish(reply, "+WPI".into()).await {
            tracing::warn!(%error, "could not extend a message's ack wait");
        }
    }
}
