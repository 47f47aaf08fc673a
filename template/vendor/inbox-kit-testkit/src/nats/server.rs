//! A NATS server of one test's own, for the tests that stop and restart
//! the broker: the shared one (`NATS_URL`) serves every other test at the
//! same time, so it is never touched. It listens on a loopback port the
//! server picks itself (and reports), and keeps its JetStream store in a
//! directory of its own, so a restart on the same port finds its streams.
//!
//! The server is `nats-server` on the `PATH`, or the one `NATS_SERVER`
//! names.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// How to get a server binary when none starts.
const NO_BINARY: &str = "this test starts a NATS server of its own: it needs `nats-server` \
     on the PATH (or its path in NATS_SERVER). To get one: apt install nats-server, \
     or download it from https://github.com/nats-io/nats-server/releases";

/// What the server logs before the address it accepts clients on.
const LISTENING: &str = "Listening for client connections on ";

/// What the server logs once it serves (JetStream included).
const READY: &str = "Server is ready";

/// A running (or stopped) server of this test's own.
pub struct OwnServer {
    child: Option<Child>,
    port: u16,
    store: tempfile::TempDir,
}

impl OwnServer {
    /// Starts a server with JetStream on a free loopback port.
    pub fn start() -> Self {
        let store = tempfile::tempdir().expect("a store directory");
        let (child, port) = spawn(&store, None);
        Self {
            child: Some(child),
            port,
            store,
        }
    }

    /// Where clients reach it.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stops it (SIGTERM, then waits for it to exit): clients lose their
    /// connection.
    pub fn stop(&mut self) {
        let mut child = self.child.take().expect("the server is running");
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: `kill` only sends a signal, to a child not yet reaped.
        let signalled = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(signalled, 0, "could not signal the NATS server");
        child.wait().expect("the NATS server exits");
    }

    /// Starts it again, on the same port, with the same streams.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "the server is still running");
        let (child, port) = spawn(&self.store, Some(self.port));
        assert_eq!(port, self.port, "the server came back on another port");
        self.child = Some(child);
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `nats-server` on `port` (any free one if `None`), storing in
/// `store`; returns it once it is ready, with its port.
fn spawn(store: &tempfile::TempDir, port: Option<u16>) -> (Child, u16) {
    let binary = std::env::var("NATS_SERVER").unwrap_or_else(|_| "nats-server".to_owned());
    // -1: a random free port, which the server logs.
    let port_arg = port.map_or_else(|| "-1".to_owned(), |port| port.to_string());
    let mut child = Command::new(&binary)
        .args(["--jetstream", "--addr", "127.0.0.1", "--port", &port_arg])
        .arg("--store_dir")
        .arg(store.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("could not start {binary}: {error}\n{NO_BINARY}"));
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut logged = String::new();
    let mut listening = None;
    for line in lines.by_ref().map_while(Result::ok) {
        logged.push_str(&line);
        logged.push('\n');
        if let Some(at) = line.find(LISTENING) {
            let address = &line[at + LISTENING.len()..];
            listening = address
                .rsplit_once(':')
                .and_then(|(_, port)| port.trim().parse::<u16>().ok());
        }
        if line.contains(READY) {
            break;
        }
    }
    let Some(port) = listening else {
        let status = child.wait().expect("the server exited");
        panic!("{binary} did not start ({status}):\n{logged}\n{NO_BINARY}");
    };
    // Its log is read to the end in the background, so that the server
    // never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, port)
}
