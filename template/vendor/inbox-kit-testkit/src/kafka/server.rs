//! A Kafka-compatible broker of one test's own: tansu, on a free loopback
//! port, storing in SQLite in a directory of its own, stopped when the test
//! ends (and by the kernel if the test process dies first).
//!
//! Why SQLite storage: tansu's in-memory engine counts produce batches,
//! not records, in the end offsets it reports, and a fetch from a committed
//! offset inside a batch returns nothing, so a consumer resuming there
//! would lose records and the tests would blame it. Its SQLite engine keeps
//! records one by one. (Its PostgreSQL engine, in 0.6.0, does not ship its
//! schema.) Nothing here works around the consumer: producers batch
//! normally, consumers commit and resume where they like.
//!
//! The broker is `tansu` on the `PATH`, or the one `TANSU` names.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How to get the broker when none starts.
pub const NO_BINARY: &str = "these tests start a Kafka-compatible broker of their own: they need \
     `tansu` on the PATH (or its path in TANSU). To get it: \
     cargo install tansu --version 0.6.0 --locked --features dynostore,libsql";

/// What tansu logs once it accepts clients.
const READY: &str = "ready in";

/// The longest a broker may take to start.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// Where a broker keeps its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// SQLite, in the broker's directory: record by record, what the tests
    /// use.
    Sqlite,
    /// Memory: several times faster, for the benchmark, and correct only
    /// when every produce request holds one record (see the module doc):
    /// A project's test `Broker` then produces them one by one.
    Memory,
}

/// A running broker of this test's own.
pub struct OwnBroker {
    child: Child,
    port: u16,
    _store: tempfile::TempDir,
}

impl OwnBroker {
    /// Starts one on a free loopback port (trying another port if the one
    /// picked was taken meanwhile).
    pub fn start(storage: Storage) -> Self {
        let store = tempfile::tempdir().expect("a store directory");
        let mut last_log = String::new();
        for _ in 0..5 {
            let port = free_port();
            match spawn(&store, port, storage) {
                Ok(child) => {
                    return Self {
                        child,
                        port,
                        _store: store,
                    };
                }
                Err(log) => last_log = log,
            }
        }
        panic!("tansu did not start:\n{last_log}\n{NO_BINARY}");
    }

    /// Where clients reach it: `host:port`.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills it and waits until it is gone: its port refuses from then on.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Starts tansu on `port`, storing in `store`; returns it once it serves,
/// or what it logged if it ended first.
fn spawn(store: &tempfile::TempDir, port: u16, storage: Storage) -> Result<Child, String> {
    let binary = std::env::var("TANSU").unwrap_or_else(|_| "tansu".to_owned());
    let url = format!("tcp://127.0.0.1:{port}");
    let mut command = Command::new(&binary);
    command
        .args([
            "broker",
            "--listener-url",
            &url,
            "--advertised-listener-url",
            &url,
        ])
        .arg("--storage-engine")
        .arg(match storage {
            // Relative to the working directory: the store's.
            Storage::Sqlite => "sqlite://tansu.db",
            Storage::Memory => "memory://tansu/",
        })
        .current_dir(store.path())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl only sets this process's parent-death signal; it is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("could not start {binary}: {error}\n{NO_BINARY}"));
    let (lines, logged) = mpsc::channel();
    for output in [
        Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ] {
        let lines = lines.clone();
        // Read to the end, so that the broker never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
    }
    drop(lines);
    let mut log = String::new();
    let deadline = Instant::now() + START_PATIENCE;
    while let Ok(line) = logged.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let ready = line.contains(READY);
        log.push_str(&line);
        log.push('\n');
        if ready {
            return Ok(child);
        }
    }
    let _ = child.kill();
    let status = child.wait().expect("the broker exited");
    Err(format!("{binary} on port {port} ({status}):\n{log}"))
}
