//! Running a consumer: the runtime's pipeline (`inbox_kit_runtime::pipeline`)
//! with this project's handlers. It takes messages from a source, routes
//! them to workers by their event's partition key, commits them in batches
//! through each worker's inbox, and settles every message only after its
//! transaction returned.

pub use inbox_kit_runtime::pipeline::{
    ByPartitionKey, DEFAULT_BATCH_SIZE, DEFAULT_BATCH_WAIT_MS, PROGRESS_LINE, Report, Route,
    Summary, run, run_until,
};

use crate::handlers::Handlers;

/// How a run of this project's handlers is spread over workers and
/// transactions.
pub type Options = inbox_kit_runtime::pipeline::Options<Handlers>;
