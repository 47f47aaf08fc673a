//! The NATS server the broker tests run against: `NATS_URL`, by default
//! the local one. Every test gets a stream of its own (deleted afterwards),
//! so tests run in parallel without seeing each other's messages.
//!
//! `proxy` stands between a consumer and the server to check that its
//! settles are confirmed; `server` is a server of one test's own, for the
//! tests that stop and restart it (both the test kit's).

pub use inbox_kit_testkit::nats::{proxy, server};

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use futures::StreamExt;

use {{crate_name}}::envelope::to_line;
use {{crate_name}}::message::Message;
use {{crate_name}}::relay::nats::NatsSinkOptions;
use {{crate_name}}::source::nats::NatsOptions;

/// How to get a server when none answers.
const NO_SERVER: &str = "these tests need a NATS server with JetStream at NATS_URL \
     (default nats://127.0.0.1:4222). To start one: docker run -d -p 4222:4222 nats -js";

/// The server: `NATS_URL`, or the local one.
pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// The server's `host:port`, for a proxy in front of it.
pub fn nats_address() -> String {
    let url = nats_url();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    rest.rsplit_once('@')
        .map_or(rest, |(_, host)| host)
        .to_owned()
}

static STREAMS: AtomicU64 = AtomicU64::new(0);

/// A stream of one test's own.
pub struct Broker {
    runtime: tokio::runtime::Runtime,
    /// The server's URL.
    url: String,
    context: jetstream::Context,
    pub stream: String,
    subject: String,
}

/// What a durable consumer has left, as the server counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backlog {
    /// Messages not yet delivered.
    pub pending: u64,
    /// Messages delivered and not yet acknowledged (or terminated).
    pub unacknowledged: u64,
}

impl Broker {
    /// A stream on the shared server, `NATS_URL`.
    pub fn new() -> Self {
        Self::at(&nats_url())
    }

    /// A stream on the server at `url`.
    pub fn at(url: &str) -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let n = STREAMS.fetch_add(1, Ordering::Relaxed);
        let stream = format!("TEST_{}_{n}", std::process::id());
        let subject = format!("test.{}.{n}", std::process::id());
        let context = runtime.block_on(async {
            let client = async_nats::connect(url)
                .await
                .unwrap_or_else(|error| panic!("{error}\n{NO_SERVER}"));
            let context = jetstream::new(client);
            context
                .create_stream(stream::Config {
                    name: stream.clone(),
                    subjects: vec![format!("{subject}.>")],
                    ..Default::default()
                })
                .await
                .unwrap_or_else(|error| panic!("create stream {stream}: {error}\n{NO_SERVER}"));
            context
        });
        Self {
            runtime,
            url: url.to_owned(),
            context,
            stream,
            subject,
        }
    }

    /// Runs `work` on this broker's runtime.
    pub fn block_on<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(work)
    }

    /// Starts `work` on this broker's runtime, in the background.
    pub fn spawn<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.runtime.spawn(work)
    }

    /// `consume`'s options for a durable consumer of this stream.
    pub fn options(&self, durable: &str, ack_wait: Duration) -> NatsOptions {
        NatsOptions {
            nats_url: self.url.clone(),
            stream: self.stream.clone(),
            subjects: vec![format!("{}.>", self.subject)],
            durable: durable.to_owned(),
            ack_wait,
            exit_when_idle: None,
        }
    }

    /// The same, as the consumer binary's command-line options, reaching
    /// the server at `nats_url` (the server's own, or a proxy's).
    pub fn cli_args(&self, nats_url: &str, durable: &str, ack_wait: Duration) -> Vec<String> {
        vec![
            "--nats-url".into(),
            nats_url.to_owned(),
            "--stream".into(),
            self.stream.clone(),
            "--subject".into(),
            format!("{}.>", self.subject),
            "--durable".into(),
            durable.into(),
            "--ack-wait".into(),
            humantime::format_duration(ack_wait).to_string(),
        ]
    }

    /// Where `relay send` publishes in this test: a stream of its own (named
    /// after this broker's, deleted with it) and a subject prefix outside
    /// the events stream's subjects.
    pub fn relay_options(&self) -> NatsSinkOptions {
        NatsSinkOptions {
            nats_url: self.url.clone(),
            notifications_stream: format!("{}_OUT", self.stream),
            subject_prefix: format!("out.{}", self.subject),
        }
    }

    /// The same, as `relay send`'s command-line options.
    pub fn relay_cli_args(&self) -> Vec<String> {
        let options = self.relay_options();
        vec![
            "--nats-url".into(),
            options.nats_url,
            "--notifications-stream".into(),
            options.notifications_stream,
            "--subject-prefix".into(),
            options.subject_prefix,
        ]
    }

    /// Every message the relay's stream stored, in order.
    pub fn relayed(&self) -> Vec<Relayed> {
        let name = self.relay_options().notifications_stream;
        self.block_on(async {
            let mut stream = self
                .context
                .get_stream(&name)
                .await
                .expect("the relay's stream");
            let stored = stream.info().await.expect("stream info").state.messages;
            let mut relayed = Vec::new();
            for sequence in 1..=stored {
                let message = stream
                    .get_raw_message(sequence)
                    .await
                    .expect("a stored message");
                let header = |name: &str| {
                    message
                        .headers
                        .get(name)
                        .map(|value| value.as_str().to_owned())
                        .unwrap_or_default()
                };
                relayed.push(Relayed {
                    subject: message.subject.to_string(),
                    msg_id: header("Nats-Msg-Id"),
                    idempotency_key: header("Idempotency-Key"),
                    traceparent: header("traceparent"),
                    body: String::from_utf8(message.payload.to_vec()).expect("UTF-8"),
                });
            }
            relayed
        })
    }

    /// Publishes `message` as one stream message. `publish_id` is the
    /// `Nats-Msg-Id` header: give the same message two different ones to
    /// store it twice (JetStream's publish-side dedup would otherwise keep
    /// one).
    pub fn publish(&self, message: &Message, publish_id: &str) {
        self.publish_body(&to_line(message), publish_id);
    }

    /// Publishes `message` with a `traceparent` header, as a producer in a
    /// trace does.
    pub fn publish_traced(&self, message: &Message, publish_id: &str, traceparent: &str) {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("traceparent", traceparent);
        self.publish_with(&to_line(message), publish_id, headers);
    }

    /// Publishes any body, valid or not.
    pub fn publish_body(&self, body: &str, publish_id: &str) {
        self.publish_with(body, publish_id, async_nats::HeaderMap::new());
    }

    /// Publishes `body` with `headers` and `publish_id` as `Nats-Msg-Id`.
    fn publish_with(&self, body: &str, publish_id: &str, mut headers: async_nats::HeaderMap) {
        headers.insert("Nats-Msg-Id", publish_id);
        self.block_on(async {
            self.context
                .publish_with_headers(
                    format!("{}.events", self.subject),
                    headers,
                    body.to_owned().into(),
                )
                .await
                .expect("publish")
                .await
                .expect("the stream stored the message");
        });
    }

    /// What the durable consumer has left.
    pub fn backlog(&self, durable: &str) -> Backlog {
        self.block_on(async {
            let stream = self.context.get_stream(&self.stream).await.expect("stream");
            let mut consumer: jetstream::consumer::PullConsumer =
                stream.get_consumer(durable).await.expect("consumer");
            let info = consumer.info().await.expect("consumer info");
            Backlog {
                pending: info.num_pending,
                unacknowledged: u64::try_from(info.num_ack_pending).unwrap_or(0),
            }
        })
    }

    /// Takes up to `count` messages for the durable consumer and leaves
    /// them unsettled (until its ack wait expires): delivered, not
    /// acknowledged. Returns how many it took.
    pub fn take_unsettled(&self, durable: &str, count: usize) -> usize {
        self.block_on(async {
            let stream = self.context.get_stream(&self.stream).await.expect("stream");
            let consumer: jetstream::consumer::PullConsumer =
                stream.get_consumer(durable).await.expect("consumer");
            let mut messages = consumer
                .fetch()
                .max_messages(count)
                .messages()
                .await
                .expect("fetch");
            let mut taken = 0;
            while let Some(message) = messages.next().await {
                message.expect("a message");
                taken += 1;
            }
            taken
        })
    }

    /// Waits until the durable consumer has nothing left (every message
    /// acknowledged or terminated), up to `patience`; `false` if it still
    /// has some then.
    pub fn drained(&self, durable: &str, patience: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < patience {
            let exists = self.block_on(async {
                let stream = self.context.get_stream(&self.stream).await.expect("stream");
                stream
                    .get_consumer::<jetstream::consumer::pull::Config>(durable)
                    .await
                    .is_ok()
            });
            if exists
                && self.backlog(durable)
                    == (Backlog {
                        pending: 0,
                        unacknowledged: 0,
                    })
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

/// A message the relay published, as its stream stored it.
#[derive(Debug)]
pub struct Relayed {
    pub subject: String,
    pub msg_id: String,
    pub idempotency_key: String,
    /// Its trace context (empty if none).
    pub traceparent: String,
    pub body: String,
}

impl Drop for Broker {
    fn drop(&mut self) {
        let relay_stream = self.relay_options().notifications_stream;
        self.runtime.block_on(async {
            let _ = self.context.delete_stream(&self.stream).await;
            let _ = self.context.delete_stream(&relay_stream).await;
        });
    }
}
