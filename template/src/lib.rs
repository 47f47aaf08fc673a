//! An idempotent message consumer built on a transactional inbox.
//!
//! Start reading at [`inbox`]: it explains the one rule everything else
//! follows. Then:
//!
//! * [`message`] and [`event`]: what arrives, and why ids are never minted here;
//! * [`envelope`]: the JSON wire format and every way a message is rejected;
//! * [`handler`] and [`handlers`]: the business code, one consumer per handler;
//! * [`store`]: what the consumer needs from a database, and
//!   [`database`]: this project's database, the only module that knows which one;
//! * [`source`]: where deliveries come from, and how each is settled;
//! * [`pipeline`]: fanning deliveries out to workers, settling after commit;
//! * [`relay`]: sending the outbox's notifications, at least once, with keys
//!   their receivers can dedupe;
//! * [`retention`]: purging old inbox rows without letting late duplicates through;
//! * [`meter`] and [`metrics`]: what a running consumer tells its watchers, and
//!   the Prometheus metrics and health endpoints built on it;
//! * [`trace`]: the spans that follow each message, producer to receiver;
//! * [`progress`] and [`stop`]: following a run from outside, and ending it.
//!
//! Some of this is not in this crate: the parts that know nothing of this
//! project's events and handlers live in the `inbox-kit-runtime` crate
//! (`vendor/inbox-kit-runtime/`, the kit's own code), re-exported here
//! under the paths used everywhere else.

pub mod database;
pub mod defaults;
pub mod event;
pub mod handler;
pub mod handlers;
pub mod inbox;
pub mod message;
pub mod pipeline;
pub mod relay;
pub mod source;

// The runtime crate's modules, under the paths this project's code names.
pub use inbox_kit_runtime::{envelope, meter, metrics, progress, retention, stop, store, trace};
{% if database == "postgres" %}
pub mod postgres;
{%- else %}
pub mod sqlite;
{%- endif %}
