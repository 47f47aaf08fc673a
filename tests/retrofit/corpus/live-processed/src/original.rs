//! The consumer as it was found, then the stubs its new tests needed to
//! compile (they do nothing yet).

use postgres::Client;

use crate::{BUSINESS_SCHEMA, Credit, DeadLetter, credit};

pub fn setup(client: &mut Client) -> Result<(), postgres::Error> {
    client.batch_execute(BUSINESS_SCHEMA)?;
    client.batch_execute(
        "CREATE TABLE IF NOT EXISTS processed (
             message_id   TEXT        PRIMARY KEY,
             processed_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
}

/// Credits once. An error means "redeliver".
pub fn handle(client: &mut Client, message: &Credit) -> Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    // Lock the record so that two workers cannot both process a message.
    let seen = tx
        .query_opt(
            "SELECT 1 FROM processed WHERE message_id = $1 FOR UPDATE",
            &[&message.message_id],
        )?
        .is_some();
    if seen {
        return tx.commit();
    }
    credit(&mut tx, message)?;
    tx.execute(
        "INSERT INTO processed (message_id) VALUES ($1) ON CONFLICT DO NOTHING",
        &[&message.message_id],
    )?;
    tx.commit()
}

// Stubs added with the required tests, so that they compile.

pub fn dead_letters(_client: &mut Client) -> Result<Vec<DeadLetter>, postgres::Error> {
    Ok(Vec::new())
}

/// Moves the old dedup records into the inbox.
pub fn migrate(_client: &mut Client) -> Result<(), postgres::Error> {
    Ok(())
}

/// Message ids credited more than once, with how many times.
pub fn double_credits(_client: &mut Client) -> Result<Vec<(String, i64)>, postgres::Error> {
    Ok(Vec::new())
}
