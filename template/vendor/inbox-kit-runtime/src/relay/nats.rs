//! Sending notifications to NATS JetStream: one subject per topic
//! ([`Notice::topic`]: `<prefix>.email`, `<prefix>.push` for a project's
//! channels), the idempotency key both as
//! `Nats-Msg-Id` (the stream's dedup window then absorbs a quick resend:
//! the server confirms it as a duplicate) and as an `Idempotency-Key`
//! header for receivers with their own inbox, and the trace context as
//! `traceparent` (see `crate::trace`). A send counts once the stream
//! confirmed it stored the message.

use anyhow::Context;
use async_nats::jetstream::{self, stream};

use super::lines::to_line;
use super::{Notice, Outgoing, Sent, Sink};
use crate::message::TRACEPARENT;

/// Where notifications are published (options of `relay send`).
#[derive(clap::Args, Debug, Clone)]
pub struct NatsSinkOptions {
    /// NATS server URL.
    #[arg(long, env = "NATS_URL", default_value = "nats://127.0.0.1:4222")]
    pub nats_url: String,
    /// Stream that stores the notifications (created if missing).
    #[arg(long, default_value = "NOTIFICATIONS")]
    pub notifications_stream: String,
    /// Subjects are `<prefix>.<topic>` (a notification's channel).
    #[arg(long, default_value = "notifications")]
    pub subject_prefix: String,
}

/// Publishes notifications to JetStream, waiting for each confirmation.
pub struct NatsSink {
    context: jetstream::Context,
    prefix: String,
    runtime: tokio::runtime::Handle,
}

impl NatsSink {
    /// Connects, and creates the stream if it is missing. Call it from
    /// inside a tokio runtime; sends block on that runtime.
    pub async fn connect(options: &NatsSinkOptions) -> anyhow::Result<Self> {
        let client = async_nats::connect(&options.nats_url).await.with_context(|| {
            format!(
                "could not reach NATS at {} (start one with JetStream: docker run -d -p 4222:4222 nats -js)",
                options.nats_url
            )
        })?;
        let context = jetstream::new(client);
        context
            .get_or_create_stream(stream::Config {
                name: options.notifications_stream.clone(),
                subjects: vec![format!("{}.>", options.subject_prefix)],
                ..Default::default()
            })
            .await
            .with_context(|| {
                format!("could not open the stream {}", options.notifications_stream)
            })?;
        Ok(Self {
            context,
            prefix: options.subject_prefix.clone(),
            runtime: tokio::runtime::Handle::current(),
        })
    }
}

impl<N: Notice> Sink<N> for NatsSink {
    fn send(&mut self, outgoing: &Outgoing<N>) -> Sent {
        let subject = format!("{}.{}", self.prefix, outgoing.notification.topic());
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", outgoing.key.as_str());
        headers.insert("Idempotency-Key", outgoing.key.as_str());
        if let Some(traceparent) = outgoing.notification.trace_parent() {
            headers.insert(TRACEPARENT, traceparent);
        }
        let body = to_line(outgoing);
        let published = self.runtime.block_on(async {
            self.context
                .publish_with_headers(subject, headers, body.into())
                .await?
                .await
        });
        match published {
            Ok(ack) if ack.duplicate => Sent::AlreadyThere,
            Ok(_) => Sent::Confirmed,
            Err(error) => Sent::Failed(format!("publish not confirmed: {error}")),
        }
    }
}
