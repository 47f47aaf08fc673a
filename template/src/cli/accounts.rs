//! `open-account` and `status`: the `debit` ledger and what the inbox holds.

use std::process::ExitCode;

use clap::Args;

use super::output::outln;
use {{crate_name}}::database::Database;
use {{crate_name}}::inbox::{DeadLetters, Policy};
use {{crate_name}}::store::Store;

/// Create an account for the `debit` consumer (or reset its balance).
#[derive(Args)]
pub struct OpenAccountArgs {
    /// Account id.
    account: i64,
    /// Opening balance, in minor units.
    balance: i64,
}

pub fn open_account(args: OpenAccountArgs, database: &Database) -> anyhow::Result<ExitCode> {
    database.with_tables(|tables| tables.open_account(args.account, args.balance))?;
    outln!("account {} balance={}", args.account, args.balance)?;
    Ok(ExitCode::SUCCESS)
}

/// Show balances, inbox rows per consumer, notifications and dead letters.
pub fn status(database: &Database) -> anyhow::Result<ExitCode> {
    let (balances, notifications) =
        database.with_tables(|tables| Ok((tables.balances()?, tables.notifications()?)))?;
    for (account, balance) in balances {
        outln!("account {account} balance={balance}")?;
    }
    for (consumer, count) in database.inbox_rows()? {
        outln!("inbox {consumer} messages={count}")?;
    }
    outln!("notifications={}", notifications.len())?;
    let dead_letters = database.inbox(Policy::default())?.dead_letters()?;
    outln!("dead_letters={}", dead_letters.len())?;
    Ok(ExitCode::SUCCESS)
}
