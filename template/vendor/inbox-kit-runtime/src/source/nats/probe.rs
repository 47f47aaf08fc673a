//! Asking JetStream about the durable consumer, for the metrics and the
//! readiness check: one consumer-info request, with a deadline, so that a
//! scrape answers (and readiness says "unreachable") while the server is
//! away instead of hanging until the client reconnects.

use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::consumer::PullConsumer;

use crate::source::BrokerProbe;

/// The longest a probe waits for the server's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A durable consumer's view of the server.
pub struct NatsProbe {
    pub(super) client: async_nats::Client,
    pub(super) consumer: PullConsumer,
    /// The runtime the client runs on: probes come from blocking threads.
    pub(super) runtime: tokio::runtime::Handle,
}

impl BrokerProbe for NatsProbe {
    fn pending(&self) -> Result<u64, String> {
        let state = self.client.connection_state();
        if state != State::Connected {
            return Err(format!("not connected to NATS ({state:?})"));
        }
        let asked = self.runtime.block_on(async {
            tokio::time::timeout(PROBE_TIMEOUT, self.consumer.get_info()).await
        });
        match asked {
            Ok(Ok(info)) => {
                let delivered_unsettled = u64::try_from(info.num_ack_pending).unwrap_or(u64::MAX);
                Ok(info.num_pending.saturating_add(delivered_unsettled))
            }
            Ok(Err(error)) => Err(format!("could not read the consumer's state: {error}")),
            Err(_) => Err(format!(
                "NATS did not answer within {} s",
                PROBE_TIMEOUT.as_secs()
            )),
        }
    }
}
