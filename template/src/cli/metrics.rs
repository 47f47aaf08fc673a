//! `--metrics-addr`: serving Prometheus metrics while a command runs (see
//! `{{crate_name}}::metrics`).

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Args;

use {{crate_name}}::database::Database;
use {{crate_name}}::metrics::{Metrics, http};
use {{crate_name}}::pipeline::{Meter, Unmetered};

/// Serving metrics.
#[derive(Args)]
pub struct MetricsArgs {
    /// Serve Prometheus metrics at http://HOST:PORT/metrics while running
    /// (port 0: any free port; the address is printed on stderr). Off by
    /// default.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<SocketAddr>,
}

impl MetricsArgs {
    /// What watches the run: metrics served at the address given (on the
    /// current runtime, until it stops), the backlog read from `database`
    /// at each scrape; or nothing.
    pub async fn meter(&self, database: &Database) -> anyhow::Result<Arc<dyn Meter>> {
        let Some(addr) = self.metrics_addr else {
            return Ok(Arc::new(Unmetered));
        };
        let metrics = Arc::new(Metrics::watching(database.clone()));
        let bound = http::serve(addr, metrics.clone()).await?;
        eprintln!("metrics: serving http://{bound}/metrics");
        Ok(metrics)
    }
}
