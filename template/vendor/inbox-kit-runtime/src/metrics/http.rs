//! The HTTP endpoints: `GET /metrics` for a Prometheus server, and
//! `GET /health/live` and `GET /health/ready` for an orchestrator (200 when
//! healthy, 503 with the reason in the body when not; see [`super::health`]).
//!
//! They run as a task on the command's tokio runtime, beside the pipeline,
//! and stop with it. Whatever reads the database (a scrape, a readiness
//! check) runs on the blocking pool, never on the runtime's own threads.
//! The address may have port 0 (any free one): the bound address is
//! returned, and the commands print it, so that scripts and tests never
//! guess a free port.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::Metrics;

/// The content type of the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Runs `work` (which may block) off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response())
}

async fn metrics(metrics: Arc<Metrics>) -> Response {
    match blocking(move || metrics.render()).await {
        Ok(text) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(failed) => failed,
    }
}

/// 200 with `healthy`, or 503 with the reason.
fn health(verdict: Result<(), String>, healthy: &'static str) -> Response {
    match verdict {
        Ok(()) => (StatusCode::OK, format!("{healthy}\n")).into_response(),
        Err(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")).into_response(),
    }
}

/// Serves `metrics` and the health endpoints at `addr` until the runtime
/// stops; `/health/live` fails once a batch has run for `stuck_after`.
/// Returns the address bound.
pub async fn serve(
    addr: SocketAddr,
    watched: Arc<Metrics>,
    stuck_after: Duration,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("could not serve metrics on {addr}"))?;
    let bound = listener
        .local_addr()
        .context("could not read the metrics address")?;
    let (live, ready) = (watched.clone(), watched.clone());
    let app = Router::new()
        .route("/metrics", get(move || metrics(watched.clone())))
        .route(
            "/health/live",
            get(move || {
                let verdict = live.liveness(stuck_after);
                async move { health(verdict, "live") }
            }),
        )
        .route(
            "/health/ready",
            get(move || {
                let ready = ready.clone();
                async move {
                    match blocking(move || ready.readiness()).await {
                        Ok(verdict) => health(verdict, "ready"),
                        Err(failed) => failed,
                    }
                }
            }),
        );
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the metrics endpoint stopped");
        }
    });
    Ok(bound)
}
