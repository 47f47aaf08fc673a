//! `cargo bench --bench inbox`: the consumer against its baselines, all
//! measured in the same run on the same machine, printed as Markdown tables.
//!
//! * `run` throughput on a generated JSON-lines input with 30% duplicates,
//!   for several worker counts, one transaction per delivery and batched,
//!   batches applied one delivery at a time and through the debit's
//!   set-based path (median of three runs each);
//! * the same pipeline with no inbox (the bare business update), so the
//!   inbox's cost is a ratio;
//! * the database's raw limit: inbox rows inserted the fastest plain way;
//! * the same runs with metrics on (`--metrics-addr`, scraped every
//!   second) and off, so their cost is a ratio;
//! * one iteration of the 4 workers x 50 messages parallel scenario (median
//!   and p99), and the database's reference consumer where it has one;
//! * peak memory of the `run` binary on the input and on one five times
//!   larger: it streams, so the two should be about equal;
//! * the outbox relay writing JSON lines, against a plain send loop
//!   (`tests/support/relay_rates.rs`).
//!
//! Sizes: `BENCH_DELIVERIES` (default 200000), `BENCH_ITERATIONS` (default
//! 500); `BENCH_TABLES=metrics,relay` prints only those tables. What only makes sense on this project's database (its settings,
//! its raw limit, its reference) is in `tests/support/*/bench.rs`. A custom
//! harness rather than criterion or divan: the results are whole-pipeline
//! rates and ratios between configurations, which those tools' per-function
//! statistics do not express.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use inbox_kit_testkit::bench::{median, thousands};
use {{crate_name}}::handlers::{AnyHandler, Debit, Handlers};
use {{crate_name}}::inbox::{Delivery, Inbox, Outcome, Policy, StorageError};
use {{crate_name}}::meter::Unmetered;
use {{crate_name}}::metrics::Metrics;
use {{crate_name}}::pipeline::{self, Options, Summary};
use {{crate_name}}::relay::lines::LinesSink;
use {{crate_name}}::source::lines::{LinesSource, Rejects};
use {{crate_name}}::store::Store;
use support::database::Fixture;
use support::database::bench::{self, Reference};
use support::debit_variant::DebitVariant;
use support::harness::{
    Raw, RealInbox, ThisProject, env_number, parallel_judged, play_parallel,
    play_parallel_meeting_once,
};
use support::relay_rates::relay_table;
use support::subjects::DebitSubject;
use support::workload::{Payments, fixture_with_accounts};

/// Each throughput figure is the median of this many runs.
const REPEATS: usize = 3;
/// How often the metrics table's runs with metrics on are scraped: 15
/// times as often as a Prometheus server's default interval (15 s).
const SCRAPE_EVERY: Duration = Duration::from_secs(1);
/// Each figure of the metrics table is the median of this many runs: the
/// difference it shows is a few percent, within one run's noise.
const METRICS_REPEATS: usize = 7;

fn main() {
    let deliveries = env_number("BENCH_DELIVERIES", 200_000) as usize;
    let iterations = env_number("BENCH_ITERATIONS", 500) as usize;
    let folder = tempfile::tempdir().expect("temporary folder");
    let input = folder.path().join("deliveries.jsonl");
    let distinct = write_input(&input, deliveries);
    println!(
        "inbox benchmark: {deliveries} deliveries ({distinct} distinct, {:.0}% duplicates), {iterations} scenario iterations, {} CPUs\n",
        100.0 * (deliveries - distinct) as f64 / deliveries as f64,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );

    let tables = Tables::from_env();
    if tables.wants("throughput") {
        let ids: Vec<String> = (0..deliveries).map(|n| format!("m-{n:08}")).collect();
        let raw = median(
            (0..REPEATS)
                .map(|_| bench::raw_insert_rate(&Fixture::without_tripwires(), &ids))
                .collect(),
        );
        throughput_table(&input, deliveries, raw);
    }
    if tables.wants("metrics") {
        metrics_table(&input, deliveries);
    }
    if tables.wants("parallel") {
        let reference = bench::reference(iterations, folder.path());
        scenario_table(iterations, reference.as_ref());
    }
    if tables.wants("memory") {
        memory_table(folder.path(), &input, deliveries);
    }
    if tables.wants("relay") {
        relay_table(
            "written as JSON lines (to nowhere)",
            env_number("BENCH_RELAY_ROWS", 20_000) as usize,
            REPEATS,
            || LinesSink::new(Box::new(std::io::sink())),
        );
    }
}

/// Which tables to print: `BENCH_TABLES`, a comma-separated list of
/// `throughput`, `metrics`, `parallel`, `memory`, `relay`; all by default.
struct Tables(Option<Vec<String>>);

impl Tables {
    const ALL: [&str; 5] = ["throughput", "metrics", "parallel", "memory", "relay"];

    fn from_env() -> Self {
        let Ok(list) = std::env::var("BENCH_TABLES") else {
            return Self(None);
        };
        let names: Vec<String> = list.split(',').map(|name| name.trim().to_owned()).collect();
        if let Some(unknown) = names
            .iter()
            .find(|name| !Self::ALL.contains(&name.as_str()))
        {
            eprintln!(
                "BENCH_TABLES: no table {unknown:?}; the tables are {}",
                Self::ALL.join(", ")
            );
            std::process::exit(2);
        }
        Self(Some(names))
    }

    fn wants(&self, table: &str) -> bool {
        self.0
            .as_ref()
            .is_none_or(|names| names.iter().any(|name| name == table))
    }
}

/// Writes `count` deliveries, a share of them redeliveries of an earlier
/// message (most of them recent, as broker retries are), and returns how
/// many distinct messages there are.
fn write_input(path: &Path, count: usize) -> usize {
    let mut out = BufWriter::new(File::create(path).expect("input file"));
    let mut payments = Payments::new(0x5eed_cafe_f00d);
    for payment in payments.by_ref().take(count) {
        serde_json::to_writer(&mut out, &payment.envelope).expect("write input");
        out.write_all(b"\n").expect("write input");
    }
    payments.distinct()
}

/// The business update alone, batch by batch: the pipeline without an inbox.
struct BareUpdate(Box<dyn Raw<ThisProject>>);

impl Inbox<Handlers> for BareUpdate {
    fn deliver_batch(&mut self, batch: &[Delivery<'_>]) -> Result<Vec<Outcome>, StorageError> {
        self.0.begin()?;
        let outcomes = batch
            .iter()
            .map(|d| match self.0.apply(d.handler, d.message) {
                Ok(()) => Outcome::Applied,
                Err(error) => Outcome::Failed(error.to_string()),
            })
            .collect();
        self.0.commit()?;
        Ok(outcomes)
    }
}

fn run_pipeline<I: Inbox<Handlers> + 'static>(
    input: &Path,
    options: Options,
    handler: Arc<AnyHandler>,
    open: impl Fn() -> Result<I, StorageError> + Send + Sync + 'static,
) -> (Summary, Duration) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let reader: Box<dyn Read + Send> = Box::new(File::open(input).expect("input"));
    let source = LinesSource::new(
        reader,
        Rejects::to_stderr(ProgressBar::hidden()),
        ProgressBar::hidden(),
    );
    let started = Instant::now();
    let summary = runtime
        .block_on(pipeline::run(
            Box::new(source),
            vec![handler],
            open,
            options,
        ))
        .expect("pipeline")
        .summary;
    (summary, started.elapsed())
}

/// Throughput with metrics on (scraped every [`SCRAPE_EVERY`], far more
/// often than a Prometheus server would) against metrics off, in pairs of
/// runs, which one goes first alternating: the medians of
/// [`METRICS_REPEATS`] runs each, and the median of the pairs' ratios.
fn metrics_table(input: &Path, deliveries: usize) {
    println!("## Metrics on and off (debit consumer, {deliveries} deliveries)\n");
    println!(
        "| transactions | workers | metrics off (deliveries/s) | metrics on (deliveries/s) | on vs off |"
    );
    println!("|---|---|---|---|---|");
    let batched = Options::default().batch_size;
    let handler: Arc<AnyHandler> = Arc::new(Debit);
    for (mode, batch_size, workers) in [
        ("one per delivery".to_owned(), 1, 1),
        (format!("batched ({batched}), set-based"), batched, 4),
    ] {
        let mut off = Vec::new();
        let mut on = Vec::new();
        for repeat in 0..METRICS_REPEATS {
            // Which goes first alternates: the second run of a pair meets
            // what the first left behind (dirty pages, a file being
            // deleted), and it must not always be the same one.
            let order = if repeat % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for metered in order {
                let fixture = fixture_with_accounts();
                let database = fixture.database();
                let metrics = Arc::new(Metrics::watching(database.clone(), &[handler.consumer()]));
                let options = Options {
                    workers,
                    batch_size,
                    meter: if metered {
                        metrics.clone()
                    } else {
                        Arc::new(Unmetered)
                    },
                    ..Options::default()
                };
                let scraping = AtomicBool::new(metered);
                let (summary, took) = std::thread::scope(|scope| {
                    scope.spawn(|| {
                        while scraping.load(Ordering::Relaxed) {
                            metrics.render();
                            std::thread::sleep(SCRAPE_EVERY);
                        }
                    });
                    let run = run_pipeline(input, options, handler.clone(), move || {
                        database.inbox(Policy::default())
                    });
                    scraping.store(false, Ordering::Relaxed);
                    run
                });
                assert_eq!(summary.failed + summary.rejected, 0, "{summary}");
                let rate = deliveries as f64 / took.as_secs_f64();
                if metered { &mut on } else { &mut off }.push(rate);
            }
        }
        // The ratio is the median of each pair's own: runs of one pair
        // share the machine's state of the moment.
        let ratios = on.iter().zip(&off).map(|(on, off)| on / off).collect();
        let ratio = median(ratios);
        println!(
            "| {mode} | {workers} | {} | {} | {:.0}% |",
            thousands(median(off)),
            thousands(median(on)),
            100.0 * ratio
        );
    }
    println!();
}

fn throughput_table(input: &Path, deliveries: usize, raw: f64) {
    println!("## `run` throughput (debit consumer, {deliveries} deliveries)\n");
    println!(
        "| transactions | workers | inbox (deliveries/s) | no inbox (deliveries/s) | inbox overhead | inbox vs raw limit |"
    );
    println!("|---|---|---|---|---|---|");
    let batched = Options::default().batch_size;
    let set_based: Arc<AnyHandler> = Arc::new(Debit);
    let alone: Arc<AnyHandler> = Arc::new(DebitVariant::ONE_AT_A_TIME);
    for (mode, batch_size, handler) in [
        ("one per delivery".to_owned(), 1, &set_based),
        (
            format!("batched ({batched}), one delivery at a time"),
            batched,
            &alone,
        ),
        (
            format!("batched ({batched}), set-based"),
            batched,
            &set_based,
        ),
    ] {
        for workers in bench::WORKERS {
            let options = Options {
                workers,
                batch_size,
                ..Options::default()
            };
            for configuration in bench::configurations(workers) {
                // Inbox and bare runs interleaved, median of three each: a
                // machine's speed drifts from minute to minute.
                let mut inbox_rates = Vec::new();
                let mut bare_rates = Vec::new();
                for _ in 0..REPEATS {
                    let fixture = fixture_with_accounts();
                    let database = (configuration.open)(&fixture);
                    let (summary, took) =
                        run_pipeline(input, options.clone(), handler.clone(), move || {
                            database.inbox(Policy::default())
                        });
                    assert_eq!(summary.failed + summary.rejected, 0, "{summary}");
                    inbox_rates.push(deliveries as f64 / took.as_secs_f64());

                    // Shared, so that the fixture (and its connection) is
                    // dropped here, outside the pipeline's runtime.
                    let bare = Arc::new(fixture_with_accounts());
                    let shared = bare.clone();
                    let (_, took) =
                        run_pipeline(input, options.clone(), alone.clone(), move || {
                            Ok(BareUpdate(shared.raw()))
                        });
                    bare_rates.push(deliveries as f64 / took.as_secs_f64());
                }
                let (inbox_rate, bare_rate) = (median(inbox_rates), median(bare_rates));
                println!(
                    "| {mode}{} | {workers} | {} | {} | {:.2}x | {:.0}% |",
                    configuration.label,
                    thousands(inbox_rate),
                    thousands(bare_rate),
                    bare_rate / inbox_rate,
                    100.0 * inbox_rate / raw
                );
            }
        }
    }
    println!(
        "\nRaw limit ({}): {} rows/s.\n",
        bench::RAW_LIMIT,
        thousands(raw)
    );
}

fn scenario_table(iterations: usize, reference: Option<&Reference>) {
    println!(
        "## One iteration of the parallel scenario: fresh database, 4 workers x the same 50 messages\n"
    );
    println!("| implementation | median | p99 | median vs reference |");
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
        let ratio = reference.map_or("n/a".to_owned(), |reference| {
            match reference.median_ms / median {
                faster if faster >= 1.0 => format!("{faster:.1}x faster"),
                faster => format!("{:.1}x slower", 1.0 / faster),
            }
        });
        println!("| {name} | {median:.2} ms | {p99:.2} ms | {ratio} |");
    };
    let debit = DebitSubject::real();
    measure(
        "Rust, workers meet once (as the reference does), one transaction per delivery",
        &|| {
            play_parallel_meeting_once(&debit, &RealInbox::ONE_PER_TRANSACTION, 4, 50);
        },
    );
    measure(
        "Rust, workers meet once (as the reference does), batched (16 per transaction)",
        &|| {
            play_parallel_meeting_once(&debit, &RealInbox::BATCHED, 4, 50);
        },
    );
    measure(
        "Rust, workers meet before every message (as the required test does), one transaction per delivery",
        &|| {
            play_parallel(&debit, &RealInbox::ONE_PER_TRANSACTION, 4, 50);
        },
    );
    measure(
        "Rust, the same round judged against model and oracle",
        &|| {
            parallel_judged(&debit, &RealInbox::ONE_PER_TRANSACTION, 4, 50, 1, 0)
                .expect("the real inbox passes");
        },
    );
    match reference {
        Some(reference) => println!(
            "| {} | {:.2} ms | {:.2} ms | 1.0x |\n\n{}\n",
            reference.name, reference.median_ms, reference.p99_ms, reference.note
        ),
        None => println!("\n(no reference consumer for this database, or it could not run)\n"),
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
    let small = peak_rss_kib(input);
    let large = peak_rss_kib(&larger);
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
fn peak_rss_kib(input: &Path) -> i64 {
    let fixture = fixture_with_accounts();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which also reports its peak memory"
    )]
    let child = Command::new(env!("CARGO_BIN_EXE_{{project-name}}"))
        .args(fixture.cli_args())
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
