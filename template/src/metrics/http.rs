//! The HTTP endpoint a Prometheus server scrapes: `GET /metrics`.
//!
//! It runs as a task on the command's tokio runtime, beside the pipeline,
//! and stops with it. The address may have port 0 (any free one): the
//! bound address is returned, and the commands print it, so that scripts
//! and tests never guess a free port.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::Metrics;

/// The content type of the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A scrape's answer. Rendering may read the database, so it runs on the
/// blocking pool, never on the runtime's own threads.
async fn render(metrics: Arc<Metrics>) -> Response {
    match tokio::task::spawn_blocking(move || metrics.render()).await {
        Ok(text) => ([(CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// Serves `metrics` at `http://{addr}/metrics` until the runtime stops;
/// returns the address bound.
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("could not serve metrics on {addr}"))?;
    let bound = listener
        .local_addr()
        .context("could not read the metrics address")?;
    let app = Router::new().route("/metrics", get(move || render(metrics.clone())));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the metrics endpoint stopped");
        }
    });
    Ok(bound)
}
