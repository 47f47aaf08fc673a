//! `--metrics-addr`: serving Prometheus metrics while a command runs (see
//! [`crate::metrics`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::handler::{Registry, Subscriber};
use crate::meter::{Meter, Unmetered};
use crate::metrics::{Metrics, http};
use crate::progress::note;
use crate::source::BrokerProbe;
use crate::store::Store;

/// Serving metrics.
#[derive(Args)]
pub struct MetricsArgs {
    /// Serve Prometheus metrics at http://HOST:PORT/metrics, and health
    /// checks at /health/live and /health/ready, while running (port 0: any
    /// free port; the address is printed on stderr). Off by default.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<SocketAddr>,
    /// With --metrics-addr: /health/live answers 503 once a batch has been
    /// in its transaction this long (stuck on a lock, or on a handler that
    /// never returns), so that an orchestrator restarts the process.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    stuck_after: Duration,
}

impl MetricsArgs {
    /// What watches the run: metrics served at the address given (on the
    /// current runtime, until it stops), the backlog read from `database`
    /// at each scrape, a series for each of `consumers` from the start,
    /// the source's broker (if it has one) asked too; or nothing.
    pub async fn meter<S: Store>(
        &self,
        database: &S,
        consumers: &[Arc<<S::Registry as Registry>::Handler<'static>>],
        broker: Option<Box<dyn BrokerProbe>>,
    ) -> anyhow::Result<Arc<dyn Meter<S::Registry>>> {
        let Some(addr) = self.metrics_addr else {
            return Ok(Arc::new(Unmetered));
        };
        let names: Vec<&'static str> = consumers.iter().map(|handler| handler.consumer()).collect();
        let mut metrics = Metrics::watching(database.clone(), &names);
        if let Some(probe) = broker {
            metrics = metrics.probing(probe);
        }
        let metrics = Arc::new(metrics);
        let bound = http::serve(addr, metrics.clone(), self.stuck_after).await?;
        note(format_args!(
            "metrics: serving http://{bound}/metrics (and /health/live, /health/ready)"
        ));
        Ok(metrics)
    }
}
