//! The add-a-consumer workflow as data. The kit's tests replay the steps
//! `/add-handler` asks of an agent (a stub and the failing tests first,
//! then the implementation) on a generated project, and check what each
//! step should show. The consumer comes from `tests/fixtures/`; to replay
//! another one, describe it in a new [`Consumer`] value.
//!
//! Paths and fixture names may hold `{db}`, the project's database module
//! (`sqlite` or `postgres`), and fixture texts `{crate}`, its crate name:
//! one description replays on every database.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// A new consumer, as the changes `/add-handler` asks for, step by step.
pub struct Consumer {
    /// Folder under `tests/fixtures/` holding the files the changes name.
    pub fixture: &'static str,
    /// The handler. Its lines between `// implementation: begin` and
    /// `// implementation: end` are the implementation; the stub replaces
    /// them with [`Consumer::stub_body`].
    pub handler: Place,
    /// Signature edits that make the stub compile without warnings.
    pub stub_signature: &'static [(&'static str, &'static str)],
    pub stub_body: &'static str,
    /// Step 2 besides the handler: the event, the registration, the
    /// tables' trait implemented as a stub that stores nothing.
    pub scaffolding: &'static [Change],
    /// Step 6 besides the handler: the table with its key and the SQL.
    pub storage: &'static [Change],
    /// Step 3: the subject, which every required test plays.
    pub tests: &'static [Change],
    /// The file of the subject (step 3), which must not change afterwards.
    pub tests_file: &'static str,
    /// What running the required tests against the stub shows.
    pub red: Red,
    /// Full names of the required tests that fail against the stub.
    pub test_names: &'static [&'static str],
    /// An edit that weakens the subject (for the red-before-green check):
    /// afterwards no required test fails against the implementation.
    pub weaken: Edit,
    /// Wrong versions of the consumer, and which required tests stop each.
    pub wrong: &'static [Wrong],
}

pub struct Place {
    pub fixture: &'static str,
    pub path: &'static str,
}

#[derive(Clone, Copy)]
pub struct Edit {
    pub path: &'static str,
    pub find: &'static str,
    pub replace: &'static str,
}

/// One change to a generated project.
pub enum Change {
    /// Replaces text in a file.
    Edit(Edit),
    /// Inserts a fixture file's text before `anchor` in a file.
    Insert {
        path: &'static str,
        anchor: &'static str,
        fixture: &'static str,
    },
    /// Appends a fixture file to a file.
    Append {
        path: &'static str,
        fixture: &'static str,
    },
    /// Replaces a fixture file's text, appended before, by another's.
    Replace {
        path: &'static str,
        from: &'static str,
        to: &'static str,
    },
}

/// The failing run against the stub.
pub struct Red {
    /// `cargo test` arguments that run the required tests.
    pub command: &'static [&'static str],
    /// A line of its output showing which of them failed.
    pub summary: &'static str,
    /// An expected value from one of the failing assertions.
    pub message: &'static str,
}

/// A wrong version of the consumer (the edits that make it on each
/// database), and the required tests that stop it there every time (others
/// may fail too): on a database where it is not wrong (a rule checked by a
/// plain read, where writers never run side by side), none, and then none
/// may fail.
pub struct Wrong {
    pub name: &'static str,
    pub on_sqlite: (&'static [Edit], &'static [&'static str]),
    pub on_postgres: (&'static [Edit], &'static [&'static str]),
}

impl Wrong {
    /// The edits that make it on `database`, and the tests that stop it.
    pub fn on(&self, database: &str) -> (&'static [Edit], &'static [&'static str]) {
        match database {
            "postgres" => self.on_postgres,
            _ => self.on_sqlite,
        }
    }
}

/// The project's database module: `sqlite` or `postgres`.
pub fn database_of(root: &Path) -> &'static str {
    if root.join("src/postgres").is_dir() {
        "postgres"
    } else {
        "sqlite"
    }
}

/// `path` with `{db}` replaced by the project's database module.
fn resolved(root: &Path, path: &str) -> String {
    path.replace("{db}", database_of(root))
}

const HANDLER: &str = "src/handlers/reserving.rs";
const TABLES: &str = "src/{db}/tables.rs";
/// The required tests, run for every subject, the new one included.
const BUSINESS_KEY: &str = "required::business_key";
const RULES: &str = "required::rules_across_messages";
/// The required tests that fail against the stub: every one that plays
/// the consumer's facts (the subject has no fact it cannot apply).
const RED_TESTS: &[&str] = &[
    "required::run_twice",
    "required::parallel",
    "required::redelivery",
    "required::restart",
    BUSINESS_KEY,
    "required::exact_ids",
    "required::failed_commit",
    "required::database_faults",
    RULES,
    "required::dead_letters",
];
/// The required tests that a consumer which applies nothing, or the wrong
/// thing, fails.
const EVERY_TEST: &[&str] = &[
    "required::run_twice",
    "required::parallel",
    "required::redelivery",
    "required::restart",
    BUSINESS_KEY,
    RULES,
];
const NAMED_DEBIT_STOPPED_BY: &[&str] =
    &["coverage::every_registered_consumer_has_a_name_of_its_own"];

const NO_KEY: Edit = Edit {
    path: TABLES,
    find: "PRIMARY KEY,\n    sku            ",
    replace: "NOT NULL,\n    sku            ",
};
const DOES_NOTHING: Edit = Edit {
    path: HANDLER,
    find: "        let refusal = match tables.reserve(&reservation)? {",
    replace: "        let refusal = match Reserved::Done {",
};
const TWICE: Edit = Edit {
    path: HANDLER,
    find: "            quantity: request.quantity,",
    replace: "            quantity: 2 * request.quantity,",
};
const NO_STOCK_CHECK: Edit = Edit {
    path: HANDLER,
    find: "            Reserved::OnlyLeft(left) => format!(\"only {left} of {} left\", request.sku),",
    replace: "            Reserved::OnlyLeft(_) => return Ok(()),",
};
const PLAIN_READ_SQLITE: Edit = Edit {
    path: TABLES,
    find: "        let taken = self\n            .db\n            .prepare_cached(\n                \"UPDATE stock SET available = available - ?1 WHERE sku = ?2 AND available >= ?1\",\n            )?\n            .execute(params![reservation.quantity, reservation.sku])?;",
    replace: "        let left: Option<i64> = self\n            .db\n            .query_row(\"SELECT available FROM stock WHERE sku = ?1\", [&reservation.sku], |row| row.get(0))\n            .optional()?;\n        let taken = match left {\n            Some(left) if left >= reservation.quantity => self.db.execute(\n                \"UPDATE stock SET available = ?1 WHERE sku = ?2\",\n                params![left - reservation.quantity, reservation.sku],\n            )?,\n            _ => 0,\n        };",
};
const PLAIN_READ_POSTGRES: Edit = Edit {
    path: TABLES,
    find: "        let taken = self.client.execute(\n            \"UPDATE stock SET available = available - $1 WHERE sku = $2 AND available >= $1\",\n            &[&reservation.quantity, &reservation.sku],\n        )?;",
    replace: "        let left: Option<i64> = self\n            .client\n            .query_opt(\"SELECT available FROM stock WHERE sku = $1\", &[&reservation.sku])?\n            .map(|row| row.get(0));\n        let taken = match left {\n            Some(left) if left >= reservation.quantity => self.client.execute(\n                \"UPDATE stock SET available = $1 WHERE sku = $2\",\n                &[&(left - reservation.quantity), &reservation.sku],\n            )?,\n            _ => 0,\n        };",
};
const NAMED_DEBIT: Edit = Edit {
    path: HANDLER,
    find: "        \"reservations\"\n",
    replace: "        \"debit\"\n",
};

/// A `reservations` consumer of a new `stock.reserved` event: each
/// reservation once under its own id (from the payload), the stock of a sku
/// never below zero (a rule across messages), a reservation of a sku not
/// stocked or of more than is left refused for good.
pub const RESERVING: Consumer = Consumer {
    fixture: "reserving",
    handler: Place {
        fixture: "handler.rs",
        path: HANDLER,
    },
    stub_signature: &[
        (
            "(&self, tables: &mut T, message: &Message)",
            "(&self, _tables: &mut T, _message: &Message)",
        ),
        // What only the implementation uses (clippy runs at step 3).
        (
            "use crate::event::{Event, NotSubscribed};",
            "use crate::event::Event;",
        ),
        (
            "use crate::handler::{Handler, HandlerError, Refused, Subscriber};",
            "use crate::handler::{Handler, HandlerError, Subscriber};",
        ),
    ],
    stub_body: "        Ok(())\n",
    scaffolding: &[
        Change::Insert {
            path: "src/event.rs",
            anchor: "}\n\n/// Payload of `payment.captured`.",
            fixture: "event_variant.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "/// The longest refund or payment id a refund may name",
            fixture: "event_payload.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "\n    /// What the event is about, for spreading messages over workers",
            fixture: "event_const.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "            other => Err(InvalidEvent::UnknownType(other.to_owned())),",
            fixture: "event_decode.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "        }\n    }\n}\n\n/// A handler was given an event",
            fixture: "event_encode.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "        }\n    }\n\n    /// The payment, if this is a `payment.captured` event.",
            fixture: "event_partition.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "    /// The payment, if this is a `payment.captured` event.",
            fixture: "event_accessor.rs",
        },
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "mod refund;\n",
            replace: "mod refund;\nmod reserving;\n",
        }),
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "pub use refund::{Refund, Refundable, Refunded, Refunds};\n",
            replace: "pub use refund::{Refund, Refundable, Refunded, Refunds};\npub use reserving::{Reservation, Reserved, Reserving, Stock};\n",
        }),
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "pub trait Tables: Ledger + Outbox + Refunds {}\n\nimpl<T: Ledger + Outbox + Refunds + ?Sized> Tables for T {}",
            replace: "pub trait Tables: Ledger + Outbox + Refunds + Stock {}\n\nimpl<T: Ledger + Outbox + Refunds + Stock + ?Sized> Tables for T {}",
        }),
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Refund)]",
            replace: "vec![\n        Arc::new(Debit),\n        Arc::new(Notify),\n        Arc::new(Refund),\n        Arc::new(Reserving),\n    ]",
        }),
        Change::Append {
            path: TABLES,
            fixture: "tables_{db}_stub.rs",
        },
    ],
    storage: &[
        Change::Replace {
            path: TABLES,
            from: "tables_{db}_stub.rs",
            to: "tables_{db}.rs",
        },
        Change::Insert {
            path: TABLES,
            anchor: "\"#;\n",
            fixture: "schema_{db}.sql",
        },
    ],
    tests: &[
        Change::Edit(Edit {
            path: "tests/support/subjects.rs",
            find: "        Box::new(RefundSubject::real()),\n",
            replace: "        Box::new(RefundSubject::real()),\n        Box::new(ReservingSubject),\n",
        }),
        Change::Append {
            path: "tests/support/subjects.rs",
            fixture: "subject.rs",
        },
    ],
    tests_file: "tests/support/subjects.rs",
    red: Red {
        command: &["test", "--test", "conformance", "required"],
        summary: "test result: FAILED. 1 passed; 10 failed",
        message: "the model gives",
    },
    test_names: RED_TESTS,
    // The rounds of the rules across messages no longer contend: together
    // they fit in the stock.
    weaken: Edit {
        path: "tests/support/subjects.rs",
        find: "pub const SCARCE_RESERVATIONS: [i64; 5] = [60, 50, 40, 20, 10];",
        replace: "pub const SCARCE_RESERVATIONS: [i64; 5] = [10, 10, 10, 10, 10];",
    },
    wrong: &[
        Wrong {
            name: "the reservation id's unique key removed",
            on_sqlite: (&[NO_KEY], &[BUSINESS_KEY]),
            on_postgres: (&[NO_KEY], &[BUSINESS_KEY]),
        },
        Wrong {
            name: "a handler that does nothing",
            on_sqlite: (&[DOES_NOTHING], EVERY_TEST),
            on_postgres: (&[DOES_NOTHING], EVERY_TEST),
        },
        Wrong {
            name: "twice the quantity reserved",
            on_sqlite: (&[TWICE], EVERY_TEST),
            on_postgres: (&[TWICE], EVERY_TEST),
        },
        Wrong {
            name: "the stock check removed",
            on_sqlite: (&[NO_STOCK_CHECK], EVERY_TEST),
            on_postgres: (&[NO_STOCK_CHECK], EVERY_TEST),
        },
        Wrong {
            name: "the stock checked with a plain read, then written from Rust",
            // Right on SQLite: the delivery's BEGIN IMMEDIATE holds the one
            // write lock, so nothing else writes between the read and the
            // write.
            on_sqlite: (&[PLAIN_READ_SQLITE], &[]),
            on_postgres: (&[PLAIN_READ_POSTGRES], &[RULES]),
        },
        Wrong {
            name: "the consumer named `debit`",
            on_sqlite: (&[NAMED_DEBIT], NAMED_DEBIT_STOPPED_BY),
            on_postgres: (&[NAMED_DEBIT], NAMED_DEBIT_STOPPED_BY),
        },
    ],
};

impl Consumer {
    fn fixture_text(&self, root: &Path, name: &str) -> String {
        let path = super::kit_root()
            .join("tests/fixtures")
            .join(self.fixture)
            .join(resolved(root, name));
        let text =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
        text.replace("{crate}", &crate_name(root))
    }

    /// The handler with its implementation replaced by the stub.
    pub fn stub(&self, root: &Path) -> String {
        let handler = self.fixture_text(root, self.handler.fixture);
        let begin_marker = "        // implementation: begin";
        let end_marker = "        // implementation: end\n";
        let begin = handler.find(begin_marker).expect("begin marker");
        let end = handler.find(end_marker).expect("end marker") + end_marker.len();
        let mut head = handler[..begin].to_string();
        for (from, to) in self.stub_signature {
            assert!(
                head.contains(from),
                "the stub's signature edit no longer applies: {from}"
            );
            head = head.replace(from, to);
        }
        format!("{head}{}{}", self.stub_body, &handler[end..])
    }

    fn make(&self, root: &Path, changes: &[Change]) {
        for change in changes {
            match change {
                Change::Edit(edit) => edit.apply(root),
                Change::Insert {
                    path,
                    anchor,
                    fixture,
                } => {
                    let file = root.join(resolved(root, path));
                    let text = fs::read_to_string(&file).expect("file to insert into");
                    let addition = self.fixture_text(root, fixture);
                    if !text.contains(&addition) {
                        assert!(
                            text.contains(anchor),
                            "{path} no longer contains {anchor:?}: update the change"
                        );
                        let changed = text.replacen(anchor, &format!("{addition}{anchor}"), 1);
                        fs::write(&file, changed).unwrap();
                    }
                }
                Change::Append { path, fixture } => {
                    let file = root.join(resolved(root, path));
                    let text = fs::read_to_string(&file).expect("file to append to");
                    let addition = self.fixture_text(root, fixture);
                    if !text.contains(&addition) {
                        fs::write(&file, text + &addition).unwrap();
                    }
                }
                Change::Replace { path, from, to } => {
                    let file = root.join(resolved(root, path));
                    let text = fs::read_to_string(&file).expect("file to replace in");
                    let (from, to) = (self.fixture_text(root, from), self.fixture_text(root, to));
                    if !text.contains(&to) {
                        assert!(
                            text.contains(&from),
                            "{path} does not hold the stub to replace"
                        );
                        fs::write(&file, text.replacen(&from, &to, 1)).unwrap();
                    }
                }
            }
        }
    }

    /// Step 3 of `/add-handler`: the subject, which every required test
    /// plays.
    pub fn write_tests(&self, root: &Path) {
        self.make(root, self.tests);
    }

    /// Step 2: the event, the tables' trait as a stub that stores nothing,
    /// and the handler as a stub that does nothing, registered.
    pub fn write_stub(&self, root: &Path) {
        self.make(root, self.scaffolding);
        fs::write(
            root.join(resolved(root, self.handler.path)),
            self.stub(root),
        )
        .unwrap();
    }

    /// Step 6: the real handler and storage (with step 2's scaffolding, if
    /// the stub is not there yet: once it is, `cargo fmt` may have
    /// reformatted the scaffolding, so it is left as it is).
    pub fn write_implementation(&self, root: &Path) {
        if !root.join(resolved(root, self.handler.path)).exists() {
            self.make(root, self.scaffolding);
        }
        self.make(root, self.storage);
        fs::write(
            root.join(resolved(root, self.handler.path)),
            self.fixture_text(root, self.handler.fixture),
        )
        .unwrap();
    }

    /// Every file the steps write, as written in this description (with
    /// `{db}` for the database module).
    pub fn touched_files(&self) -> BTreeSet<&'static str> {
        let mut files = BTreeSet::from([self.handler.path]);
        let steps = [self.scaffolding, self.storage, self.tests];
        for change in steps.iter().flat_map(|changes| changes.iter()) {
            files.insert(match change {
                Change::Edit(edit) => edit.path,
                Change::Insert { path, .. }
                | Change::Append { path, .. }
                | Change::Replace { path, .. } => *path,
            });
        }
        files
    }

    /// The subject's file, as it is now.
    pub fn test_text(&self, root: &Path) -> String {
        fs::read_to_string(root.join(self.tests_file)).expect("the subjects")
    }
}

/// The project's crate name, from its manifest.
fn crate_name(root: &Path) -> String {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let name = manifest
        .lines()
        .find_map(|line| line.strip_prefix("name = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("the package name");
    name.replace('-', "_")
}

/// Applies each edit once: an edit whose result is already there is skipped.
pub fn apply(root: &Path, edits: &[Edit]) {
    for edit in edits {
        edit.apply(root);
    }
}

impl Edit {
    pub fn apply(&self, root: &Path) {
        if self.edits_a_kit_crate() {
            super::use_the_vendored_crates(root);
        }
        let path = root.join(resolved(root, self.path));
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Already made: the result is there, and is not only a part of
        // the text the edit would change (an edit that deletes words).
        if text.contains(self.replace)
            && (self.replace.contains(self.find) || !text.contains(self.find))
        {
            return;
        }
        assert!(
            text.contains(self.find),
            "{} no longer contains {:?}: update the edit",
            self.path,
            self.find
        );
        fs::write(&path, text.replacen(self.find, self.replace, 1)).unwrap();
    }

    /// Undoes [`Edit::apply`].
    pub fn revert(&self, root: &Path) {
        let path = root.join(resolved(root, self.path));
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains(self.replace), "{} was not edited", self.path);
        fs::write(&path, text.replacen(self.replace, self.find, 1)).unwrap();
        if self.edits_a_kit_crate() {
            super::share_the_kits_crates(root);
        }
    }

    /// Whether the edit is to the project's vendored copy of a kit crate.
    fn edits_a_kit_crate(&self) -> bool {
        self.path.starts_with("vendor/")
    }
}

/// The required tests that fail with `edits` applied to the project at
/// `root` (the edits are reverted afterwards), and the run's output.
pub fn failing_with(root: &Path, edits: &[Edit]) -> (BTreeSet<String>, String) {
    apply(root, edits);
    let run = super::cargo(root, &["test", "--test", "conformance"]);
    let output = String::from_utf8_lossy(&run.stdout).into_owned();
    for edit in edits.iter().rev() {
        edit.revert(root);
    }
    let failed: BTreeSet<String> = super::hook::failed_tests(&output).into_iter().collect();
    assert!(
        failed.is_empty() == run.status.success(),
        "the run's status does not match its failed tests:\n{output}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    (failed, output)
}
