//! The runtime of an inbox-kit consumer: the parts that know nothing of
//! the consumer's own events, handlers or tables (generic over them where
//! they must meet them).
//!
//! A generated project depends on this crate and never the other way
//! round, so a fix made here reaches every project by a version bump
//! instead of a hand merge. The project re-exports each module under its
//! old path (`crate::progress`, `crate::stop`, `crate::inbox::StorageError`),
//! so its code reads the same whether a module lives here or there.
//!
//! * [`message`]: a message, generic over the project's event type, and
//!   the rules its id must follow (fixed by the sender, never minted here);
//! * [`inbox`]: what the inbox decides for each delivery whatever the
//!   database: what a handler's result (or panic) means, the outcome,
//!   when a failing message is given up on;
//! * [`delivery`]: the seam between a consumer and its database: one
//!   delivery, and the traits each database's inbox and dead letters
//!   implement, generic over the project's [`handler::Registry`];
//! * [`store`]: what a consumer needs from a database, one trait that
//!   each database feature implements for any project;
//! * [`sqlite`] (feature `sqlite`): the transactional inbox and its dead
//!   letters on SQLite, run on the project's tables, and the database file
//!   that holds them ([`sqlite::Database`]);
//! * [`steps`]: which deliveries of a batch go through a handler's
//!   set-based path together, and which alone;
//! * [`handler`]: the `Handler` trait, generic over the project's events
//!   and tables, what a project registers (`Registry`), and what every handler shares: its error, its refusal,
//!   the rules for a consumer's name, and picking consumers by name;
//! * [`storage`]: a database error sorted into a fault, so that the inbox
//!   can tell a database in trouble (nothing is held against the message)
//!   from a write it refused (the delivery failed);
//! * [`lines`]: input split into lines with a bounded buffer, so one huge
//!   line cannot exhaust memory;
//! * [`offsets`]: which offset each Kafka partition may
//!   commit, so a message being retried is never skipped by a restart;
//! * [`postgres`] (feature `postgres`): the transactional inbox and its
//!   dead letters on PostgreSQL, on a pipelined connection;
//! * [`envelope`]: the JSON wire format of every source, generic over the
//!   project's events ([`envelope::Wire`]), and every way a line is refused;
//! * [`source`]: where messages come from, and how each is settled once
//!   its transaction returned (done, retry, parked, abandoned): a file of
//!   JSON lines ([`source::lines`]), NATS JetStream (`source::nats`,
//!   feature `nats`) and Kafka (`source::kafka`, feature `kafka`);
//! * [`pipeline`]: a run: a source's messages routed to workers, each
//!   committing batches through its own inbox, every message settled
//!   after its commit, the outcomes counted;
//! * [`relay`]: the outbox's other half: a project's rows ([`relay::Notice`])
//!   sent at least once, each with a key its receiver deduplicates on,
//!   marked sent only after the send was confirmed, failures retried and
//!   then parked; to JSON lines, NATS JetStream (`relay::nats`, feature
//!   `nats`) or Kafka (`relay::kafka`, feature `kafka`);
//! * [`retention`]: purging old inbox rows, never inside the redelivery
//!   horizon, a window of keys per transaction (each database's
//!   `retention`);
//! * [`meter`]: what watches the transactions and the relay;
//! * [`metrics`]: the Prometheus metrics and health endpoints built on a
//!   [`meter::Meter`], reading the backlog from a project's store
//!   ([`metrics::Watched`]);
//! * [`trace`]: the `receive`, `deliver` and `relay` spans that follow a
//!   message across processes (W3C `traceparent`);
//! * [`progress`]: progress lines, and pausing a process at one of them,
//!   so tests and scripts follow a run without racing it;
//! * [`stop`]: ending a run gracefully on a signal;
//! * `cli` (feature `cli`): what every consumer's command line shares:
//!   printing to a pipe that may close, the progress options, logs and
//!   traces over OTLP.

#[cfg(feature = "cli")]
pub mod cli;
pub mod delivery;
pub mod envelope;
pub mod handler;
pub mod inbox;
pub mod lines;
pub mod message;
pub mod meter;
pub mod metrics;
pub mod offsets;
pub mod pipeline;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod progress;
pub mod relay;
pub mod retention;
pub mod source;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod steps;
pub mod stop;
pub mod storage;
pub mod store;
pub mod trace;
