//! `dead-letters`: look at the messages that failed too often, and give
//! them another chance once their handler or data is fixed.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use super::output::outln;
use super::usage::UsageError;
use crate::delivery::DeadLetters;
use crate::envelope::Wire;
use crate::handler::{BadConsumers, Registry};
use crate::inbox::{Outcome, Policy};
use crate::message::{Message, MessageId};
use crate::store::Store;

/// Messages parked after failing `--max-attempts` times.
#[derive(Subcommand)]
pub enum DeadLettersCommand {
    /// List dead letters: consumer, message id, attempts, and the last error
    /// (or, for a message its handler refused, the reason).
    List,
    /// Deliver dead letters again. Each one that applies is removed; one that
    /// fails again stays, unchanged. Exit code 4 if any failed again.
    Redrive {
        /// Only this consumer's dead letters.
        #[arg(long, value_name = "NAME")]
        consumer: Option<String>,
        /// Only these message ids; default: all.
        ids: Vec<String>,
    },
}

/// The project's handlers picked by name (its `handlers::select`).
pub type Select<R> =
    fn(&[String]) -> Result<Vec<Arc<<R as Registry>::Handler<'static>>>, BadConsumers>;

/// Runs `command` on `database`, finding the handler of each dead letter
/// by its consumer's name with `select`.
pub fn execute<S: Store>(
    command: DeadLettersCommand,
    database: &S,
    select: Select<S::Registry>,
) -> anyhow::Result<ExitCode>
where
    <S::Registry as Registry>::Event: Wire,
{
    match command {
        DeadLettersCommand::List => {
            let letters = database.inbox(Policy::default())?.dead_letters()?;
            for letter in &letters {
                // A refused message was never retried: its reason is a
                // verdict, not the last of several errors.
                outln!(
                    "{} {} attempts={} {}={:?}",
                    letter.consumer,
                    letter.message_id,
                    letter.attempts,
                    if letter.refused { "refused" } else { "error" },
                    letter.error
                )?;
            }
            outln!("dead_letters={}", letters.len())?;
            Ok(ExitCode::SUCCESS)
        }
        DeadLettersCommand::Redrive { consumer, ids } => redrive(database, select, consumer, &ids),
    }
}

fn redrive<S: Store>(
    database: &S,
    select: Select<S::Registry>,
    consumer: Option<String>,
    ids: &[String],
) -> anyhow::Result<ExitCode>
where
    <S::Registry as Registry>::Event: Wire,
{
    if let Some(name) = &consumer {
        select(std::slice::from_ref(name)).map_err(|error| UsageError(error.to_string()))?;
    }
    let mut inbox = database.inbox(Policy::default())?;
    let letters = inbox.dead_letters()?;
    let chosen: Vec<_> = letters
        .iter()
        .filter(|letter| {
            consumer.as_ref().is_none_or(|c| *c == letter.consumer)
                && (ids.is_empty() || ids.contains(&letter.message_id))
        })
        .collect();
    if let Some(missing) = ids
        .iter()
        .find(|id| !chosen.iter().any(|l| l.message_id == **id))
    {
        anyhow::bail!("no dead letter with message id {missing:?} (see `dead-letters list`)");
    }
    let (mut applied, mut still_failing) = (0, 0);
    for letter in chosen {
        let handler = select(std::slice::from_ref(&letter.consumer))?.remove(0);
        let message = Message {
            id: MessageId::new(letter.message_id.clone())?,
            event: Wire::decode(&letter.event_type, &letter.payload)?,
            trace_parent: None,
        };
        match inbox.redrive(S::Registry::lend(&handler), &message)? {
            Outcome::Applied => {
                applied += 1;
                outln!("{} {}: applied", letter.consumer, letter.message_id)?;
            }
            Outcome::Failed(error) | Outcome::DeadLettered(error) | Outcome::Refused(error) => {
                still_failing += 1;
                outln!(
                    "{} {}: failed again: {error}",
                    letter.consumer,
                    letter.message_id
                )?;
            }
            Outcome::Duplicate => {
                outln!("{} {}: already applied", letter.consumer, letter.message_id)?
            }
        }
    }
    outln!("redriven applied={applied} still_failing={still_failing}")?;
    Ok(if still_failing > 0 {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    })
}
