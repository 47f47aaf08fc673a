//! What `benches/inbox.rs` measures that only makes sense on SQLite: the
//! `--exclusive` lock mode, SQLite's raw insert limit, and the Python
//! consumer the seed article measured.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rusqlite::TransactionBehavior;

use {{crate_name}}::database::{Database, Settings};

use super::{Fixture, scratch_folder};

/// Worker counts the throughput table tries.
pub const WORKERS: [usize; 3] = [1, 2, 4];

/// One way of opening the database that the throughput table measures.
pub struct Configuration {
    /// Appended to the row's label.
    pub label: &'static str,
    pub open: fn(&Fixture) -> Database,
}

/// The configurations worth measuring with `workers` workers: the
/// defaults, and `--exclusive` where it is allowed (one worker).
pub fn configurations(workers: usize) -> Vec<Configuration> {
    let mut configurations = vec![Configuration {
        label: "",
        open: Fixture::database,
    }];
    if workers == 1 {
        configurations.push(Configuration {
            label: ", --exclusive",
            open: |fixture| {
                let exclusive = Settings {
                    exclusive: true,
                    ..Settings::default()
                };
                Database::new(fixture.location(), exclusive)
            },
        });
    }
    configurations
}

/// How the raw limit is measured, for the table's footnote.
pub const RAW_LIMIT: &str = "one prepared INSERT of an inbox row in a loop, one transaction";

/// Inserts an inbox row per id the fastest plain way; returns rows/s.
pub fn raw_insert_rate(fixture: &Fixture, ids: &[String]) -> f64 {
    let mut db = fixture.database().connect().expect("connect");
    let started = Instant::now();
    let tx = db
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .expect("begin");
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO inbox (consumer, message_id, received_at) VALUES ('debit', ?1, 0)",
            )
            .expect("prepare");
        for id in ids {
            insert.execute([id]).expect("insert");
        }
    }
    tx.commit().expect("commit");
    ids.len() as f64 / started.elapsed().as_secs_f64()
}

/// A reference measured in the same run: the seed article's Python
/// consumer doing the parallel scenario.
pub struct Reference {
    pub name: &'static str,
    pub median_ms: f64,
    pub p99_ms: f64,
    /// A sentence about what else the reference measured.
    pub note: String,
}

/// The Python reference (`benches/seed_baseline.py`), when `python3` runs.
pub fn reference(iterations: usize, loop_folder: &Path) -> Option<Reference> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/seed_baseline.py");
    let output = Command::new("python3")
        .arg(script)
        .args([iterations.to_string(), "20000".to_owned()])
        .arg(scratch_folder())
        .arg(loop_folder)
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    Some(Reference {
        name: "Python reference consumer (benches/seed_baseline.py)",
        median_ms: result["parallel_median_ms"].as_f64()?,
        p99_ms: result["parallel_p99_ms"].as_f64()?,
        note: format!(
            "Python, one connection, one transaction per delivery, no parsing, in the throughput folder: {:.0} deliveries/s.",
            result["loop_per_second"].as_f64()?
        ),
    })
}
