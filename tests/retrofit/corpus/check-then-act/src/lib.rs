//! A wallet consumer that inbox-kit did not generate, as a retrofit would
//! find it, next to its reference retrofit.
//!
//! **Shape.** rusqlite; `run` hands events from a feed with no
//! acknowledgements (a file, stdin) to N worker threads, each with its own
//! connection. Each event debits an account and writes a ledger row.
//!
//! **Flaws.** A SELECT on `processed_events` decides whether an event is
//! new, then the debit, the ledger row and the record are three separate
//! statements with no transaction around them (check-then-act: parallel
//! workers all see "new"; a failure halfway leaves half an event). A
//! failed event is logged and dropped: nothing delivers it again.
//!
//! **Retrofit.** One `BEGIN IMMEDIATE` transaction per delivery that
//! inserts the inbox row first; since the feed has no redelivery, a failed
//! event goes to a retry table with backoff that `retry_due` sweeps, and
//! to `dead_letters` after three attempts; `migrate` carries the ids of
//! `processed_events` into the inbox; `double_applied` reports what
//! check-then-act already applied twice.
//!
//! `cargo test` judges the original; `cargo test --features retrofitted`
//! the retrofit. The tests in `tests/required.rs` are the same for both.

#[cfg(not(feature = "retrofitted"))]
mod original;
#[cfg(not(feature = "retrofitted"))]
pub use original::*;

#[cfg(feature = "retrofitted")]
mod retrofit;
#[cfg(feature = "retrofitted")]
pub use retrofit::*;

/// One debit, as the feed delivers it. `id` is the sender's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub account: i64,
    pub amount: i64,
}

/// An event parked after too many failed attempts, with what is needed to
/// deliver it again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub event: Event,
    pub attempts: u32,
    pub error: String,
}

/// The business tables, the same before and after the retrofit.
pub const BUSINESS_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS accounts (
        id      INTEGER PRIMARY KEY,
        balance INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ledger (
        event_id TEXT    NOT NULL,
        account  INTEGER NOT NULL,
        amount   INTEGER NOT NULL
    );
";

/// Hands the feed's events to `workers` threads, each on its own connection.
/// The retrofit left it as it was: only `open` and `handle` changed.
pub fn run(
    path: &std::path::Path,
    events: impl IntoIterator<Item = Event>,
    workers: usize,
) -> rusqlite::Result<()> {
    let (sender, receiver) = std::sync::mpsc::channel();
    for event in events {
        sender.send(event).expect("the receiver is alive");
    }
    drop(sender);
    let receiver = std::sync::Mutex::new(receiver);
    let connections = (0..workers)
        .map(|_| open(path))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    std::thread::scope(|scope| {
        for db in connections {
            let receiver = &receiver;
            scope.spawn(move || {
                loop {
                    let next = receiver.lock().expect("queue").recv();
                    let Ok(event) = next else { break };
                    handle(&db, &event);
                }
            });
        }
    });
    Ok(())
}

/// The business update: the debit, then its ledger row.
pub fn debit(db: &rusqlite::Connection, event: &Event) -> rusqlite::Result<()> {
    db.execute(
        "UPDATE accounts SET balance = balance - ?1 WHERE id = ?2",
        (event.amount, event.account),
    )?;
    db.execute(
        "INSERT INTO ledger (event_id, account, amount) VALUES (?1, ?2, ?3)",
        (&event.id, event.account, event.amount),
    )?;
    Ok(())
}
