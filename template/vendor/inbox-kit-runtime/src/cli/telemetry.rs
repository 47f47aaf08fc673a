//! Where the process reports what it does: logs on stderr (`RUST_LOG`,
//! `warn` by default), and with `--otlp-endpoint` the spans of
//! `inbox_kit_runtime::trace` exported to an OpenTelemetry collector over
//! OTLP/HTTP, in batches, from a thread of their own. Without it no span is
//! recorded at all, so tracing costs nothing when it is off.

use anyhow::Context;
use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::trace;

/// The reporting in place; exports the spans still buffered when dropped.
pub struct Telemetry {
    exporting: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the logs, and the span export if `otlp_endpoint` (the
    /// collector's base URL, e.g. `http://127.0.0.1:4318`) is given, for
    /// the service `service` (a project's crate name: the target of its
    /// own spans, and the service its traces name). `quiet` are log
    /// directives that hold a noisy dependency down whatever `RUST_LOG`
    /// says (a database driver's).
    pub fn init(
        otlp_endpoint: Option<&str>,
        service: &'static str,
        quiet: &[&str],
    ) -> anyhow::Result<Self> {
        let mut filter =
            EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
        for quiet in quiet {
            filter = filter.add_directive(quiet.parse().expect("a valid directive"));
        }
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter);
        let exporting = otlp_endpoint
            .map(|endpoint| exporter(endpoint, service))
            .transpose()?;
        let spans = exporting.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer(service))
                .with_filter(
                    Targets::new()
                        .with_target(service, Level::INFO)
                        .with_target(trace::TARGET, Level::INFO),
                )
        });
        tracing_subscriber::registry().with(logs).with(spans).init();
        Ok(Self { exporting })
    }
}

/// Spans of `service` batched and sent to `{endpoint}/v1/traces`.
fn exporter(endpoint: &str, service: &'static str) -> anyhow::Result<SdkTracerProvider> {
    let traces = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(&traces)
        .build()
        .with_context(|| format!("could not export traces to {traces}"))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(service).build())
        .build())
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.exporting.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("warning: traces not all exported: {error}");
        }
    }
}
