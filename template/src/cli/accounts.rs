//! `open-account` and `status`: the `debit` ledger and what the inbox holds.

use std::process::ExitCode;

use clap::Args;

use {{crate_name}}::database::Database;
use {{crate_name}}::handlers;
use {{crate_name}}::inbox::dead_letters;

/// Create an account for the `debit` consumer (or reset its balance).
#[derive(Args)]
pub struct OpenAccountArgs {
    /// Account id.
    account: i64,
    /// Opening balance, in minor units.
    balance: i64,
}

pub fn open_account(args: OpenAccountArgs, database: &Database) -> anyhow::Result<ExitCode> {
    handlers::open_account(&database.connect()?, args.account, args.balance)?;
    println!("account {} balance={}", args.account, args.balance);
    Ok(ExitCode::SUCCESS)
}

/// Show balances, inbox rows per consumer, notifications and dead letters.
pub fn status(database: &Database) -> anyhow::Result<ExitCode> {
    let db = database.connect()?;
    for (account, balance) in handlers::balances(&db)? {
        println!("account {account} balance={balance}");
    }
    let mut per_consumer =
        db.prepare("SELECT consumer, count(*) FROM inbox GROUP BY consumer ORDER BY consumer")?;
    let rows = per_consumer.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
    })?;
    for row in rows {
        let (consumer, count) = row?;
        println!("inbox {consumer} messages={count}");
    }
    println!("notifications={}", handlers::notifications(&db)?.len());
    println!("dead_letters={}", dead_letters(&db)?.len());
    Ok(ExitCode::SUCCESS)
}
