//! What `benches/inbox.rs` measures that only makes sense on PostgreSQL:
//! more workers (a server takes several writers at once) and the server's
//! raw insert limit.

use std::path::Path;
use std::time::Instant;

use {{crate_name}}::database::Database;

use super::Fixture;

/// Worker counts the throughput table tries.
pub const WORKERS: [usize; 3] = [1, 4, 8];

/// One way of opening the database that the throughput table measures.
pub struct Configuration {
    /// Appended to the row's label.
    pub label: &'static str,
    pub open: fn(&Fixture) -> Database,
}

/// The configurations worth measuring: the defaults.
pub fn configurations(_workers: usize) -> Vec<Configuration> {
    vec![Configuration {
        label: "",
        open: Fixture::database,
    }]
}

/// How the raw limit is measured, for the table's footnote.
pub const RAW_LIMIT: &str =
    "one INSERT ... SELECT FROM unnest($1) of every inbox row, one transaction";

/// Inserts an inbox row per id the fastest plain way; returns rows/s.
pub fn raw_insert_rate(fixture: &Fixture, ids: &[String]) -> f64 {
    let mut client = fixture.database().connect().expect("connect");
    let started = Instant::now();
    let mut tx = client.transaction().expect("begin");
    tx.execute(
        "INSERT INTO inbox (consumer, message_id, received_at)
         SELECT 'debit', id, 0 FROM unnest($1::text[]) AS id",
        &[&ids],
    )
    .expect("bulk insert");
    tx.commit().expect("commit");
    ids.len() as f64 / started.elapsed().as_secs_f64()
}

/// A reference measured in the same run.
pub struct Reference {
    pub name: &'static str,
    pub median_ms: f64,
    pub p99_ms: f64,
    /// A sentence about what else the reference measured.
    pub note: String,
}

/// No reference consumer for PostgreSQL (the Python one is the seed
/// article's SQLite consumer).
pub fn reference(_iterations: usize, _loop_folder: &Path) -> Option<Reference> {
    None
}
