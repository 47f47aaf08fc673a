//! Who waits for whom on the server, for the harness's hang report: a
//! session of this process (or one it blocks) waiting for a lock, and the
//! session holding it. A claim that waits for a lock its own delivery's
//! transaction holds shows up here as two sessions of this process, the
//! holder idle in its transaction.

use std::time::Duration;

use super::{application, server_url};

/// What a hang report says of a claim waiting for its own transaction's
/// lock: a session of this process waiting for another of this process.
pub const LOCK_WAIT_EVIDENCE: Option<&str> = Some("held by session");

/// One line per lock wait that involves this process, at most ten; a line
/// saying why when the server cannot be asked.
pub fn describe_waits() -> Vec<String> {
    match lock_waits() {
        Ok(lines) if lines.is_empty() => vec!["no session of this process waits for a lock".into()],
        Ok(lines) => lines,
        Err(error) => vec![format!(
            "could not ask the server who waits for what: {error}"
        )],
    }
}

fn lock_waits() -> Result<Vec<String>, postgres::Error> {
    let mut config: postgres::Config = server_url().parse()?;
    config.connect_timeout(Duration::from_secs(5));
    config.application_name("inbox-test-hang-report");
    let mut client = config.connect(postgres::NoTls)?;
    client.batch_execute("SET statement_timeout = '5s'")?;
    let ours = application();
    let rows = client.query(
        "SELECT waiter.pid, waiter.application_name = $1,
                coalesce(waiter.wait_event_type || ' ' || waiter.wait_event, 'a lock'),
                left(regexp_replace(waiter.query, '\\s+', ' ', 'g'), 160),
                holder.pid, holder.application_name = $1, coalesce(holder.state, '?'),
                left(regexp_replace(holder.query, '\\s+', ' ', 'g'), 160)
         FROM pg_stat_activity waiter
         CROSS JOIN LATERAL unnest(pg_blocking_pids(waiter.pid)) AS blocking(pid)
         JOIN pg_stat_activity holder ON holder.pid = blocking.pid
         WHERE waiter.datname = current_database()
           AND (waiter.application_name = $1 OR holder.application_name = $1)
         ORDER BY waiter.pid
         LIMIT 10",
        &[&ours],
    )?;
    let whose = |this: bool| {
        if this {
            "of this process"
        } else {
            "of another process"
        }
    };
    Ok(rows
        .iter()
        .map(|row| {
            format!(
                "session {} {} waits for {} in `{}`, held by session {} {} ({}, last statement `{}`)",
                row.get::<_, i32>(0),
                whose(row.get(1)),
                row.get::<_, String>(2),
                row.get::<_, String>(3),
                row.get::<_, i32>(4),
                whose(row.get(5)),
                row.get::<_, String>(6),
                row.get::<_, String>(7),
            )
        })
        .collect())
}
