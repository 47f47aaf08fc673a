//! The relay run to its end, and against a plain send loop for the
//! benchmarks' relay table. Both send the
//! same number of outbox rows to the same kind of sink in the same run; the
//! plain loop reads every row once and sends it, nothing more, while the
//! relay takes rows in batches, sends each and marks it sent after its
//! send was confirmed. The ratio between the two is what at-least-once
//! bookkeeping costs.

use std::time::Instant;

use {{crate_name}}::handlers::{CHANNELS, Notification, Outbox};
use {{crate_name}}::meter::Unmetered;
use {{crate_name}}::progress::Progress;
use {{crate_name}}::relay::{
    Notice, Outgoing, RelayCounts, RelayPolicy, Sent, Sink, Until, Watch, relay,
};
use {{crate_name}}::stop::Stop;
use {{crate_name}}::store::Store;

use super::database::Fixture;
use inbox_kit_testkit::bench::{median, thousands};

/// Rows `relay send` takes per batch by default.
const RELAY_BATCH: usize = 100;

/// Prints the table: `rows` outbox rows sent by the plain loop and by the
/// relay into sinks that `sink` makes; `what` says where they go. Each
/// figure is the median of `repeats` runs on fresh outboxes.
pub fn relay_table<S: Sink<Notification>>(
    what: &str,
    rows: usize,
    repeats: usize,
    sink: impl Fn() -> S,
) {
    println!("\n## Relay: {rows} outbox rows {what}; median of {repeats} runs\n");
    println!("| sender | rows/s | vs plain send loop |");
    println!("|---|---|---|");
    let plain = median(
        (0..repeats)
            .map(|run| plain_send_rate(&outbox_of(rows, &format!("plain{run}")), rows, &mut sink()))
            .collect(),
    );
    let relayed = median(
        (0..repeats)
            .map(|run| relay_rate(&outbox_of(rows, &format!("relay{run}")), rows, &mut sink()))
            .collect(),
    );
    println!(
        "| plain send loop (read once, send, mark nothing) | {} | 1.00x |",
        thousands(plain)
    );
    println!(
        "| relay (batches of {RELAY_BATCH}, each marked sent after its send) | {} | {:.2}x |",
        thousands(relayed),
        relayed / plain
    );
}

/// A fresh database whose outbox holds `rows` notifications; `tag` makes
/// their keys differ from any earlier run's (a broker's dedup window would
/// otherwise answer for the receiver).
fn outbox_of(rows: usize, tag: &str) -> Fixture {
    let fixture = Fixture::new();
    fixture.with_tables(|tables| {
        (0..rows).try_for_each(|row| {
            tables.queue_notification(&Notification {
                event_id: format!("{tag}-{row:08}"),
                channel: CHANNELS[row % CHANNELS.len()].to_owned(),
                account: 1 + row as i64 % 1_000,
                body: format!("payment {row} captured"),
                trace_parent: None,
            })
        })
    });
    fixture
}

/// Relays everything in `fixture`'s outbox into `sink`, `batch` rows at a
/// time, as `relay send --until-done` does; what it counted.
pub fn relay_until_done(
    fixture: &Fixture,
    sink: &mut dyn Sink<Notification>,
    batch: usize,
) -> RelayCounts {
    let mut queue = fixture.database().relay_queue().expect("relay queue");
    relay(
        &mut queue,
        sink,
        batch,
        RelayPolicy::default(),
        Watch {
            until: Until::Done,
            stop: &Stop::default(),
            progress: &Progress::default(),
            meter: &Unmetered,
        },
    )
    .expect("relay")
}

/// Rows per second the relay sends from `fixture`'s outbox into `sink`,
/// marking each sent, until none is left.
fn relay_rate(fixture: &Fixture, rows: usize, sink: &mut dyn Sink<Notification>) -> f64 {
    let started = Instant::now();
    let counts = relay_until_done(fixture, sink, RELAY_BATCH);
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(counts.sent, rows as u64, "the relay sent every row once");
    rows as f64 / seconds
}

/// Rows per second a loop sends that reads `fixture`'s outbox once and
/// sends each row into `sink`, marking nothing.
fn plain_send_rate(fixture: &Fixture, rows: usize, sink: &mut dyn Sink<Notification>) -> f64 {
    let started = Instant::now();
    let notifications = fixture.with_tables(|tables| tables.notifications());
    let mut confirmed = 0;
    for notification in notifications {
        let outgoing = Outgoing {
            key: notification.idempotency_key(),
            notification,
            failures: 0,
        };
        if matches!(sink.send(&outgoing), Sent::Confirmed | Sent::AlreadyThere) {
            confirmed += 1;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(confirmed, rows, "the plain loop sent every row once");
    rows as f64 / seconds
}
