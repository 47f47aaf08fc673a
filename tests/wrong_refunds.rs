//! The six wrong `refund` consumers an agent plausibly writes, applied to
//! the shipped one as source edits, each judged by the project's Stop hook
//! (which runs the required tests, `cargo test --test conformance`): every
//! one that is wrong on the project's database must block the stop, with
//! the required test written for its kind of mistake among those named. The
//! support code's broken handlers (`tests/support/broken/handlers.rs`)
//! model the same mistakes inside the harness; these edits show that the
//! real source, changed the way an agent would change it, is caught too.

mod common;

use std::path::Path;
use std::process::ExitCode;

use common::hook::{Stop, one_at_a_time};
use common::replay::{Edit, apply, database_of};
use common::trials::Trials;
use common::{POSTGRES, database_url, generate};

const HANDLER: &str = "src/handlers/refund.rs";
/// The required test that judges the refunds against their model.
const RUN_TWICE: &str = "required::run_twice";
const RULES: &str = "required::rules_across_messages";

/// A wrong version: the edits that make it on each database (none where
/// it is not wrong there), and a required test among those that must stop
/// it, the one written for its kind of mistake.
struct Wrong {
    name: &'static str,
    sqlite: &'static [Edit],
    postgres: &'static [Edit],
    guard: &'static str,
}

const WRONG: &[Wrong] = &[
    Wrong {
        name: "the refund id's unique key removed (the message id's kept)",
        sqlite: &[
            Edit {
                path: "src/sqlite/tables.rs",
                find: "    refund_id  TEXT    NOT NULL PRIMARY KEY,",
                replace: "    refund_id  TEXT    NOT NULL,",
            },
            // A WITHOUT ROWID table needs a primary key.
            Edit {
                path: "src/sqlite/tables.rs",
                find: "    amount     INTEGER NOT NULL\n) WITHOUT ROWID;\nCREATE INDEX IF NOT EXISTS refunds_by_payment",
                replace: "    amount     INTEGER NOT NULL\n);\nCREATE INDEX IF NOT EXISTS refunds_by_payment",
            },
        ],
        postgres: &[Edit {
            path: "src/postgres/tables.rs",
            find: "    refund_id  text   COLLATE \"C\" PRIMARY KEY,",
            replace: "    refund_id  text   COLLATE \"C\" NOT NULL,",
        }],
        guard: "required::business_key",
    },
    Wrong {
        name: "a handler that does nothing",
        sqlite: DOES_NOTHING,
        postgres: DOES_NOTHING,
        guard: RUN_TWICE,
    },
    Wrong {
        name: "twice the amount credited",
        sqlite: &[Edit {
            path: "src/sqlite/tables.rs",
            find: ".execute(params![refund.amount, refund.account])?;",
            replace: ".execute(params![2 * refund.amount, refund.account])?;",
        }],
        postgres: &[Edit {
            path: "src/postgres/tables.rs",
            find: "UPDATE accounts SET balance = balance + recorded.amount",
            replace: "UPDATE accounts SET balance = balance + 2 * recorded.amount",
        }],
        guard: RUN_TWICE,
    },
    Wrong {
        name: "the over-refund check removed",
        sqlite: NO_CAP,
        postgres: NO_CAP,
        guard: RULES,
    },
    Wrong {
        name: "the over-refund check as a plain read of the sum (no lock)",
        // Right on SQLite: every delivery's BEGIN IMMEDIATE holds the one
        // write lock, so nothing writes between the read and the insert.
        sqlite: &[],
        postgres: &[Edit {
            path: "src/postgres/tables.rs",
            find: "lock_payment: client\n                .prepare(\"SELECT account, amount FROM debits WHERE payment_id = $1 FOR UPDATE\")?,",
            replace: "lock_payment: client\n                .prepare(\"SELECT account, amount FROM debits WHERE payment_id = $1\")?,",
        }],
        guard: RULES,
    },
    Wrong {
        name: "the refund consumer named `debit`",
        sqlite: NAMED_DEBIT,
        postgres: NAMED_DEBIT,
        guard: "coverage::every_registered_consumer_has_a_name_of_its_own",
    },
];

const DOES_NOTHING: &[Edit] = &[Edit {
    path: HANDLER,
    find: "    fn apply(&self, tables: &mut T, message: &Message) -> Result<(), HandlerError> {\n",
    replace: "    fn apply(&self, tables: &mut T, message: &Message) -> Result<(), HandlerError> {\n        if !message.id.as_str().is_empty() {\n            return Ok(());\n        }\n",
}];
const NO_CAP: &[Edit] = &[Edit {
    path: HANDLER,
    find: "        if payment.refunded + request.amount > payment.debited {",
    replace: "        if payment.refunded + request.amount < 0 {",
}];
const NAMED_DEBIT: &[Edit] = &[Edit {
    path: HANDLER,
    find: "        \"refund\"\n",
    replace: "        \"debit\"\n",
}];

/// A stop in `root`, with the database's address as a user's shell has it.
fn stop<'a>(root: &'a Path, session: &'a str) -> Stop<'a> {
    Stop::new(root, session).env("DATABASE_URL", database_url())
}

/// Every wrong version blocks the stop on this project's database, its
/// guard among the failing tests named; the shipped consumer stops.
fn every_wrong_refund_blocks_the_stop(root: &Path) {
    let _alone = one_at_a_time();
    let database = database_of(root);
    stop(root, "shipped").run().assert_allowed();
    for (n, wrong) in WRONG.iter().enumerate() {
        let edits = match database {
            "postgres" => wrong.postgres,
            _ => wrong.sqlite,
        };
        if edits.is_empty() {
            println!("{database}, {}: right on this database", wrong.name);
            continue;
        }
        apply(root, edits);
        let session = format!("wrong-{n}");
        // Only the required tests: formatting, lints and the unit tests
        // judge nothing a wrong refund changes, and the shipped consumer's
        // stop above ran them all.
        let answer = stop(root, &session)
            .env("STOP_HOOK_SKIP", "fmt clippy unit red-green")
            .run();
        for edit in edits.iter().rev() {
            edit.revert(root);
        }
        let reason = answer.reason();
        assert!(
            reason.contains(&format!(
                "  - {}  (cargo test --test conformance)",
                wrong.guard
            )),
            "{database}, {}: {} is not among the failures:\n{reason}",
            wrong.name,
            wrong.guard
        );
        let stopped_by: Vec<&str> = reason
            .lines()
            .filter_map(|line| {
                line.strip_prefix("  - ")?
                    .strip_suffix("  (cargo test --test conformance)")
            })
            .collect();
        println!("{database}, {}: blocked by {stopped_by:?}", wrong.name);
    }
}

fn every_wrong_refund_consumer_blocks_the_stop_on_sqlite() {
    let project = generate("wrong-refunds", &[]);
    every_wrong_refund_blocks_the_stop(&project.root);
}

fn every_wrong_refund_consumer_blocks_the_stop_on_postgres() {
    let project = generate("wrong-refunds-pg", POSTGRES.defines);
    every_wrong_refund_blocks_the_stop(&project.root);
}

fn main() -> ExitCode {
    Trials::default()
        .test(
            "every_wrong_refund_consumer_blocks_the_stop_on_sqlite",
            every_wrong_refund_consumer_blocks_the_stop_on_sqlite,
        )
        .needs(
            &POSTGRES,
            "every_wrong_refund_consumer_blocks_the_stop_on_postgres",
            || {},
            every_wrong_refund_consumer_blocks_the_stop_on_postgres,
        )
        .run()
}
