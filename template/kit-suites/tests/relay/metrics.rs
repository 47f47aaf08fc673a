//! `relay send --metrics-addr`: what a scrape of a running relay counts
//! (its sends by outcome, the backlog it left) agrees with its summary
//! line and with the outbox.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::kit::metrics::{scrape, series, served_at};
use crate::outbox_with;
use crate::support::kill::Running;

/// The longest a relay may take to send a few dozen rows before the test
/// calls it hung.
const HUNG: Duration = Duration::from_secs(120);

#[test]
fn a_scrape_of_a_running_relay_counts_its_sends_and_the_backlog_left() {
    let fixture = outbox_with(20);
    let rows = 40.0;
    let folder = tempfile::tempdir().unwrap();
    // Killed if the test fails before it stops the relay, which would
    // otherwise take the rows of the next test on this schema.
    let mut relay = Running::start(
        Command::new(env!("CARGO_BIN_EXE_{{project-name}}"))
            .args(fixture.cli_args())
            .args(["relay", "send", "--batch-size", "7", "--output"])
            .arg(folder.path().join("sent.jsonl"))
            .args(["--metrics-addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    // Its stderr is closed once the address is read: stopping must work
    // all the same (the signal task once panicked on a closed stderr, and
    // the relay never stopped).
    let stderr = BufReader::new(relay.child().stderr.take().expect("stderr"));
    let addr =
        served_at(stderr.lines().map_while(Result::ok)).expect("the relay printed where it serves");

    // The counters move only after a batch is marked sent, so once they
    // add up to every row, the outbox is empty. A scrape reads the backlog
    // and the counters one after the other, so the scrape that first
    // counts every row may hold a backlog read a few batches earlier: the
    // gauges are read from the next scrape, which begins after every mark.
    let started = Instant::now();
    loop {
        let text = scrape(&addr);
        let counted: f64 = series(&text, "relay_notifications_total").values().sum();
        if counted >= rows {
            break;
        }
        assert!(started.elapsed() < HUNG, "the relay hung:\n{text}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = scrape(&addr);

    // SIGTERM: the relay stops and prints what it did.
    // SAFETY: kill() only sends a signal to the child, ours and not reaped.
    unsafe {
        libc::kill(relay.child().id() as i32, libc::SIGTERM);
    }
    let stopping = Instant::now();
    while relay
        .child()
        .try_wait()
        .expect("the relay's status")
        .is_none()
    {
        assert!(
            stopping.elapsed() < HUNG,
            "the relay did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let output = relay
        .into_child()
        .wait_with_output()
        .expect("the relay ends");
    let sends = series(&text, "relay_notifications_total");
    assert_eq!(sends.get(r#"outcome="sent""#), Some(&rows), "{text}");
    assert_eq!(sends.values().sum::<f64>(), rows, "sent twice?\n{text}");
    let gauge = |name: &str| series(&text, name).values().sum::<f64>();
    assert_eq!(gauge("outbox_unsent_notifications"), 0.0, "{text}");
    assert_eq!(gauge("outbox_oldest_unsent_age_seconds"), 0.0, "{text}");
    assert!(output.status.success(), "{}", output.status);
    let summary = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        summary.trim(),
        "sent=40 already_there=0 failed=0 parked=0",
        "{text}"
    );
}
