//! `cargo bench --bench inbox`: the consumer against its baselines, all
//! measured in the same run on the same machine, printed as Markdown tables.
//!
//! * `run` throughput on a generated JSON-lines input with 30% duplicates,
//!   for 1, 2 and 4 workers, one transaction per delivery and batched
//!   (median of three runs each);
//! * the same pipeline with no inbox (the bare business update), so the
//!   inbox's cost is a ratio;
//! * SQLite's raw limit: inbox rows inserted by one prepared statement in a
//!   loop inside one transaction;
//! * one iteration of the 4 workers x 50 messages parallel scenario (median
//!   and p99), and a reference Python consumer (`seed_baseline.py`, after
//!   the article inbox-kit started from) doing the same;
//! * peak memory of the `run` binary on the input and on one five times
//!   larger: it streams, so the two should be about equal.
//!
//! Sizes: `BENCH_DELIVERIES` (default 200000), `BENCH_ITERATIONS` (default
//! 500). The scenario's databases go where the tests' fixtures go
//! (`INBOX_TEST_TMPDIR`, else `/dev/shm`, else the temporary folder); the
//! Python baseline uses the same folder. A custom harness rather than criterion or divan: the results are
//! whole-pipeline rates and ratios between configurations, which those
//! tools' per-function statistics do not express.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use rusqlite::{Connection, TransactionBehavior};

use {{crate_name}}::database::{Database, Settings};
use {{crate_name}}::handler::Handler;
use {{crate_name}}::handlers::{self, Debit};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, StorageError};
use {{crate_name}}::pipeline::{self, Options, Rejects, Summary};
use support::harness::{RealInbox, play_parallel, scratch_folder};
use support::subjects::DebitSubject;

const ACCOUNTS: u64 = 1_000;
/// Each throughput figure is the median of this many runs.
const REPEATS: usize = 3;
const DUPLICATE_SHARE: f64 = 0.3;

fn main() {
    let deliveries = env_number("BENCH_DELIVERIES", 200_000);
    let iterations = env_number("BENCH_ITERATIONS", 500);
    let folder = tempfile::tempdir().expect("temporary folder");
    let input = folder.path().join("deliveries.jsonl");
    let distinct = write_input(&input, deliveries);
    println!(
        "inbox benchmark: {deliveries} deliveries ({distinct} distinct, {:.0}% duplicates), {iterations} scenario iterations, {} CPUs\n",
        100.0 * (deliveries - distinct) as f64 / deliveries as f64,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );

    let raw = median(
        (0..REPEATS)
            .map(|_| raw_insert_rate(folder.path(), deliveries))
            .collect(),
    );
    throughput_table(folder.path(), &input, deliveries, raw);
    let python = python_baseline(iterations, 20_000, folder.path());
    scenario_table(iterations, python.as_ref());
    memory_table(folder.path(), &input, deliveries);
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number"))
    })
}

/// A small deterministic generator, so every run measures the same input.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn chance(&mut self, share: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < share
    }
}

/// Writes `count` deliveries, `DUPLICATE_SHARE` of them redeliveries of an
/// earlier message (most of them recent, as broker retries are), and
/// returns how many distinct messages there are.
fn write_input(path: &Path, count: usize) -> usize {
    let mut random = XorShift(0x5eed_cafe_f00d);
    let mut out = BufWriter::new(File::create(path).expect("input file"));
    let mut distinct = 0usize;
    for _ in 0..count {
        let id = if distinct > 0 && random.chance(DUPLICATE_SHARE) {
            let back = (random.next() % (distinct.min(1_000) as u64)) as usize;
            distinct - 1 - back
        } else {
            distinct += 1;
            distinct - 1
        };
        let account = 1 + id as u64 % ACCOUNTS;
        let line = serde_json::json!({
            "id": format!("m-{id:08}"),
            "type": "payment.captured",
            "payload": { "account": account, "amount": 1 + id % 100 },
        });
        serde_json::to_writer(&mut out, &line).expect("write input");
        out.write_all(b"\n").expect("write input");
    }
    distinct
}

fn fresh_database(folder: &Path, name: &str, exclusive: bool) -> Database {
    let path = folder.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let handlers: Vec<Arc<dyn Handler>> = vec![Arc::new(Debit)];
    let database = Database::open(&path, Settings::default(), &handlers).expect("database");
    {
        let db = database.connect().expect("connection");
        for account in 1..=ACCOUNTS as i64 {
            handlers::open_account(&db, account, 1_000_000_000).expect("account");
        }
    }
    let settings = Settings {
        exclusive,
        ..Settings::default()
    };
    Database::new(&path, settings)
}

/// SQLite's raw limit: inbox rows through one prepared statement inside one
/// transaction, from Rust.
fn raw_insert_rate(folder: &Path, rows: usize) -> f64 {
    let ids: Vec<String> = (0..rows).map(|n| format!("m-{n:08}")).collect();
    let mut db = fresh_database(folder, "raw.db", false)
        .connect()
        .expect("connection");
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
        for id in &ids {
            insert.execute([id]).expect("insert");
        }
    }
    tx.commit().expect("commit");
    rows as f64 / started.elapsed().as_secs_f64()
}

/// The business update alone, batch by batch: the pipeline without an inbox.
struct BareUpdate(Connection);

impl Inbox for BareUpdate {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        let tx = self
            .0
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let outcomes = batch
            .iter()
            .map(|d| match d.handler.apply(&tx, d.message) {
                Ok(()) => Outcome::Applied,
                Err(error) => Outcome::Failed(error.to_string()),
            })
            .collect();
        tx.commit()?;
        Ok(outcomes)
    }
}

fn run_pipeline<I: Inbox + 'static>(
    input: &Path,
    options: Options,
    open: impl Fn() -> Result<I, StorageError> + Send + Sync + 'static,
) -> (Summary, Duration) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let reader: Box<dyn Read + Send> = Box::new(File::open(input).expect("input"));
    let started = Instant::now();
    let summary = runtime
        .block_on(pipeline::run(
            reader,
            vec![Arc::new(Debit)],
            open,
            options,
            Rejects::to_stderr(ProgressBar::hidden()),
            ProgressBar::hidden(),
        ))
        .expect("pipeline")
        .summary;
    (summary, started.elapsed())
}

/// One row of the throughput table.
struct Config {
    label: String,
    workers: usize,
    batch_size: usize,
    exclusive: bool,
}

fn throughput_table(folder: &Path, input: &Path, deliveries: usize, raw: f64) {
    println!("## `run` throughput (debit consumer, {deliveries} deliveries)\n");
    println!(
        "| transactions | workers | inbox (deliveries/s) | no inbox (deliveries/s) | inbox overhead | inbox vs raw limit |"
    );
    println!("|---|---|---|---|---|---|");
    let batched = Options::default().batch_size;
    let mut configs = Vec::new();
    for (mode, batch_size) in [
        ("one per delivery".to_owned(), 1),
        (format!("batched ({batched})"), batched),
    ] {
        for workers in [1, 2, 4] {
            configs.push(Config {
                label: mode.clone(),
                workers,
                batch_size,
                exclusive: false,
            });
        }
        configs.push(Config {
            label: format!("{mode}, --exclusive"),
            workers: 1,
            batch_size,
            exclusive: true,
        });
    }
    for config in configs {
        let options = Options {
            workers: config.workers,
            batch_size: config.batch_size,
            ..Options::default()
        };
        // Inbox and bare runs interleaved, median of three each: this
        // machine's speed drifts by a fifth from minute to minute.
        let mut inbox_rates = Vec::new();
        let mut bare_rates = Vec::new();
        for _ in 0..REPEATS {
            let database = fresh_database(folder, "run.db", config.exclusive);
            let (summary, took) = run_pipeline(input, options, move || {
                database.inbox().map_err(StorageError::from)
            });
            assert_eq!(summary.failed + summary.rejected, 0, "{summary}");
            inbox_rates.push(deliveries as f64 / took.as_secs_f64());

            let bare = fresh_database(folder, "bare.db", config.exclusive);
            let (_, took) = run_pipeline(input, options, move || Ok(BareUpdate(bare.connect()?)));
            bare_rates.push(deliveries as f64 / took.as_secs_f64());
        }
        let (inbox_rate, bare_rate) = (median(inbox_rates), median(bare_rates));
        println!(
            "| {} | {} | {} | {} | {:.2}x | {:.0}% |",
            config.label,
            config.workers,
            thousands(inbox_rate),
            thousands(bare_rate),
            bare_rate / inbox_rate,
            100.0 * inbox_rate / raw
        );
    }
    println!(
        "\nRaw limit (one prepared INSERT of an inbox row in a loop, one transaction): {} rows/s.\n",
        thousands(raw)
    );
}

/// (parallel median ms, parallel p99 ms, loop deliveries/s) from the Python baseline.
fn python_baseline(
    iterations: usize,
    deliveries: usize,
    loop_folder: &Path,
) -> Option<(f64, f64, f64)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/seed_baseline.py");
    let output = Command::new("python3")
        .arg(script)
        .args([iterations.to_string(), deliveries.to_string()])
        .arg(scratch_folder())
        .arg(loop_folder)
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    Some((
        result["parallel_median_ms"].as_f64()?,
        result["parallel_p99_ms"].as_f64()?,
        result["loop_per_second"].as_f64()?,
    ))
}

fn scenario_table(iterations: usize, python: Option<&(f64, f64, f64)>) {
    println!(
        "## One iteration of the parallel scenario: fresh database, 4 workers x the same 50 messages\n"
    );
    println!(
        "Databases in {} (INBOX_TEST_TMPDIR picks another folder).\n",
        scratch_folder().display()
    );
    println!("| implementation | median | p99 | median vs Python |");
    println!("|---|---|---|---|");
    let measure = |name: &str, iteration: &dyn Fn()| {
        let mut times: Vec<Duration> = (0..iterations)
            .map(|_| {
                let started = Instant::now();
                iteration();
                started.elapsed()
            })
            .collect();
        times.sort();
        let median = times[times.len() / 2].as_secs_f64() * 1000.0;
        let p99 = times[(times.len() * 99).div_ceil(100) - 1].as_secs_f64() * 1000.0;
        let ratio = python.map_or("n/a".to_owned(), |(python, _, _)| match python / median {
            faster if faster >= 1.0 => format!("{faster:.1}x faster"),
            faster => format!("{:.1}x slower", 1.0 / faster),
        });
        println!("| {name} | {median:.2} ms | {p99:.2} ms | {ratio} |");
    };
    measure("Rust, one transaction per delivery", &|| {
        play_parallel(&DebitSubject, &RealInbox::ONE_PER_TRANSACTION, 4, 50);
    });
    measure("Rust, batched (16 per transaction)", &|| {
        play_parallel(&DebitSubject, &RealInbox::BATCHED, 4, 50);
    });
    measure("Rust, one round judged against the oracle", &|| {
        play_parallel(&DebitSubject, &RealInbox::ONE_PER_TRANSACTION, 4, 50)
            .judge(&DebitSubject)
            .expect("the real inbox passes");
    });
    match python {
        Some((median, p99, rate)) => {
            println!(
                "| Python reference consumer (benches/seed_baseline.py) | {median:.2} ms | {p99:.2} ms | 1.0x |"
            );
            println!(
                "\nPython, one connection, one transaction per delivery, no parsing, in the throughput folder: {} deliveries/s.\n",
                thousands(*rate)
            );
        }
        None => println!("| Python reference consumer | not measured: python3 unavailable | | |\n"),
    }
}

fn memory_table(folder: &Path, input: &Path, deliveries: usize) {
    let larger = folder.join("larger.jsonl");
    {
        let text = std::fs::read(input).expect("input");
        let mut out = BufWriter::new(File::create(&larger).expect("larger input"));
        for _ in 0..5 {
            out.write_all(&text).expect("write larger input");
        }
    }
    println!("## Peak memory of the `run` binary (batched, 4 workers)\n");
    println!("| input | peak RSS | vs the smaller input |");
    println!("|---|---|---|");
    let small = peak_rss_kib(folder, input);
    let large = peak_rss_kib(folder, &larger);
    println!(
        "| {deliveries} lines | {:.1} MiB | 1.00x |",
        small as f64 / 1024.0
    );
    println!(
        "| {} lines | {:.1} MiB | {:.2}x |",
        deliveries * 5,
        large as f64 / 1024.0,
        large as f64 / small as f64
    );
}

/// Runs the consumer binary on `input` and returns its peak resident memory.
fn peak_rss_kib(folder: &Path, input: &Path) -> i64 {
    let db: PathBuf = folder.join("memory.db");
    drop(fresh_database(folder, "memory.db", false));
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also reports its peak memory"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"))
        .arg("--db")
        .arg(&db)
        .args(["run", "--consumer", "debit", "--workers", "4"])
        .arg(input)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the consumer");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the local values above.
    let waited = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(waited > 0, "wait4 failed");
    usage.ru_maxrss
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn thousands(rate: f64) -> String {
    let whole = rate.round() as u64;
    let text = whole.to_string();
    let mut out = String::new();
    for (index, digit) in text.chars().enumerate() {
        if index > 0 && (text.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
