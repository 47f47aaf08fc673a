//! The consumer as it was found, then the stubs its new tests needed to
//! compile (they do nothing yet).

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::{BUSINESS_SCHEMA, DeadLetter, Event, debit};

pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let db = Connection::open(path)?;
    db.busy_timeout(Duration::from_secs(10))?;
    db.execute_batch(BUSINESS_SCHEMA)?;
    db.execute_batch("CREATE TABLE IF NOT EXISTS processed_events (event_id TEXT PRIMARY KEY)")?;
    Ok(db)
}

/// Applies one event. Errors are logged and the event is dropped.
pub fn handle(db: &Connection, event: &Event) {
    if let Err(error) = apply(db, event) {
        eprintln!("event {} failed and was dropped: {error}", event.id);
    }
}

fn apply(db: &Connection, event: &Event) -> rusqlite::Result<()> {
    let seen: bool = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM processed_events WHERE event_id = ?1)",
        [&event.id],
        |row| row.get(0),
    )?;
    if seen {
        return Ok(());
    }
    debit(db, event)?;
    db.execute(
        "INSERT OR IGNORE INTO processed_events (event_id) VALUES (?1)",
        [&event.id],
    )?;
    Ok(())
}

// Stubs added with the required tests, so that they compile.

/// Delivers the failed events whose next attempt is due at `now_ms`.
pub fn retry_due(_db: &Connection, _now_ms: i64) -> rusqlite::Result<usize> {
    Ok(0)
}

pub fn dead_letters(_db: &Connection) -> rusqlite::Result<Vec<DeadLetter>> {
    Ok(Vec::new())
}

/// Moves the old dedup records into the inbox.
pub fn migrate(_db: &Connection) -> rusqlite::Result<()> {
    Ok(())
}

/// Events the ledger holds more than once, with how many times.
pub fn double_applied(_db: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    Ok(Vec::new())
}
