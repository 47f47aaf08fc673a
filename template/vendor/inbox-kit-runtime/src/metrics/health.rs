//! What `/health/live` and `/health/ready` answer.
//!
//! *Live* means the process is making progress: no worker has been inside
//! one transaction for longer than the limit given (`--stuck-after`). An
//! idle consumer is live (it waits for messages, which is progress); one
//! whose batch waits forever on a lock, or on a handler that never
//! returns, is not, and an orchestrator restarts it (its messages come back
//! as redeliveries, which the inbox makes harmless).
//!
//! *Ready* means it can do its work now: the database answers and has
//! every table of the schema (migrations applied), and the source's broker
//! (if it has one) answers. Asked afresh at each request, on a connection
//! of its own that gives up after a few seconds.

use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use super::Metrics;

/// When each worker's transaction in flight began. A worker is one thread
/// for its whole life, so its thread names it.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    since: Mutex<HashMap<ThreadId, Instant>>,
}

impl InFlight {
    pub(super) fn began(&self) {
        let thread = std::thread::current().id();
        self.since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(thread, Instant::now());
    }

    pub(super) fn ended(&self) {
        let thread = std::thread::current().id();
        self.since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&thread);
    }

    /// How long the oldest transaction in flight has been running.
    fn longest(&self) -> Option<Duration> {
        let since = self
            .since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        since.values().min().map(Instant::elapsed)
    }
}

impl Metrics {
    /// `Ok` while no transaction has been running for `stuck_after` or
    /// longer; otherwise why not.
    pub fn liveness(&self, stuck_after: Duration) -> Result<(), String> {
        match self.in_flight.longest() {
            Some(running) if running >= stuck_after => Err(format!(
                "stuck: a batch has been in its transaction for {:.1} s (limit {:.1} s)",
                running.as_secs_f64(),
                stuck_after.as_secs_f64()
            )),
            _ => Ok(()),
        }
    }

    /// `Ok` if the database answers and has every table, and the broker
    /// (if probing one) answers; otherwise why not. Blocks on them.
    pub fn readiness(&self) -> Result<(), String> {
        if let Some((watched, _)) = &self.watched {
            match watched.missing_tables() {
                Ok(missing) if missing.is_empty() => {}
                Ok(missing) => {
                    return Err(format!(
                        "migrations not applied: no table {}",
                        missing.join(", ")
                    ));
                }
                Err(error) => return Err(format!("database unreachable: {error}")),
            }
        }
        self.broker
            .as_ref()
            .map_or(Ok(()), |broker| broker.reachable())
    }
}
