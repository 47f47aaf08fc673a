//! The add-a-consumer workflow as data. The kit's tests replay the steps
//! `/add-handler` asks of an agent (the failing tests with a stub handler
//! first, then the implementation) on a generated project, and check what
//! each step should show. The consumer comes from `tests/fixtures/`; to
//! replay another one, describe it in a new [`Consumer`] value.

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
    /// Step 2 besides the handler: the event, the storage, the
    /// registration.
    pub scaffolding: &'static [Change],
    /// Step 3: the subject and the required tests, declared.
    pub tests: &'static [Change],
    /// The file of new tests (step 3), which must not change afterwards.
    pub tests_file: &'static str,
    /// Step 7: the documentation.
    pub docs: &'static [Change],
    /// What running the tests against the stub shows.
    pub red: Red,
    /// Full names of the new tests.
    pub test_names: &'static [&'static str],
    /// An edit that weakens one new test (for the red-before-green check),
    /// and that test's name.
    pub weaken: Edit,
    pub weakened_test: &'static str,
    /// Keys of the consumer's table that are wrong, and which required
    /// tests stop each.
    pub wrong_keys: &'static [WrongKey],
}

pub struct Place {
    pub fixture: &'static str,
    pub path: &'static str,
}

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
    /// Writes a fixture file as a new file.
    Write(Place),
}

/// The failing run against the stub.
pub struct Red {
    /// `cargo test` arguments that run only the new tests.
    pub command: &'static [&'static str],
    /// A line of its output showing that all of them failed.
    pub summary: &'static str,
    /// An expected value from one of the failing assertions.
    pub message: &'static str,
}

/// A wrong unique key for the consumer's table, and the tests it fails.
pub struct WrongKey {
    pub name: &'static str,
    pub edit: Edit,
    pub stopped_by: &'static [&'static str],
}

const SCHEMA: &str = "src/sqlite/schema.sql";
const PICKS_KEY: &str = "    PRIMARY KEY (order_id, line)\n) WITHOUT ROWID;";

/// A `picking` consumer of a new `order.placed` event: one pick per order
/// line, two lines of one sku both picked.
pub const PICKING: Consumer = Consumer {
    fixture: "picking",
    handler: Place {
        fixture: "handler.rs",
        path: "src/handlers/picking.rs",
    },
    stub_signature: &[(
        "(&self, tables: &mut dyn Tables, message: &Message)",
        "(&self, _tables: &mut dyn Tables, _message: &Message)",
    )],
    stub_body: "        Ok(())\n",
    scaffolding: &[
        Change::Insert {
            path: "src/event.rs",
            anchor: "}\n\n/// Payload of `payment.captured`.",
            fixture: "event_variant.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "/// Why an event could not be decoded.",
            fixture: "event_payload.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "\n    /// Decodes the payload of a message of type `kind`.",
            fixture: "event_const.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "            other => Err(InvalidEvent::UnknownType(other.to_owned())),",
            fixture: "event_decode.rs",
        },
        Change::Insert {
            path: "src/event.rs",
            anchor: "        }\n    }\n\n    /// What the event is about, for spreading messages over workers",
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
            find: "mod notify;\n",
            replace: "mod notify;\nmod picking;\n",
        }),
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "pub use notify::{CHANNELS, Notification, Notify, Outbox};\n",
            replace: "pub use notify::{CHANNELS, Notification, Notify, Outbox};\npub use picking::{Pick, Picking, Picks};\n",
        }),
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "pub trait Tables: Ledger + Outbox {}\n\nimpl<T: Ledger + Outbox + ?Sized> Tables for T {}",
            replace: "pub trait Tables: Ledger + Outbox + Picks {}\n\nimpl<T: Ledger + Outbox + Picks + ?Sized> Tables for T {}",
        }),
        Change::Edit(Edit {
            path: "src/handlers/mod.rs",
            find: "vec![Arc::new(Debit), Arc::new(Notify)]",
            replace: "vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Picking)]",
        }),
        Change::Edit(Edit {
            path: "src/sqlite/tables.rs",
            find: "use crate::handlers::{Debited, Ledger, Notification, Outbox};",
            replace: "use crate::handlers::{Debited, Ledger, Notification, Outbox, Pick, Picks};",
        }),
        Change::Append {
            path: "src/sqlite/tables.rs",
            fixture: "tables_sqlite.rs",
        },
        Change::Append {
            path: SCHEMA,
            fixture: "schema_sqlite.sql",
        },
    ],
    tests: &[
        Change::Edit(Edit {
            path: "tests/support/subjects.rs",
            find: "::event::{Event, PaymentCaptured};",
            replace: "::event::{Event, OrderLine, OrderPlaced, PaymentCaptured};",
        }),
        Change::Edit(Edit {
            path: "tests/support/subjects.rs",
            find: "::handlers::{CHANNELS, Debit, Debited, Notification, Notify, Tables};",
            replace: "::handlers::{CHANNELS, Debit, Debited, Notification, Notify, Pick, Picking, Tables};",
        }),
        Change::Edit(Edit {
            path: "tests/support/subjects.rs",
            find: "Box::new(NotifySubject::real())",
            replace: "Box::new(NotifySubject::real()),\n        Box::new(PickingSubject)",
        }),
        Change::Append {
            path: "tests/support/subjects.rs",
            fixture: "subject.rs",
        },
        Change::Write(Place {
            fixture: "test.rs",
            path: "tests/conformance/picking.rs",
        }),
        Change::Edit(Edit {
            path: "tests/conformance/main.rs",
            find: "mod parallel;\n",
            replace: "mod parallel;\nmod picking;\n",
        }),
    ],
    tests_file: "tests/conformance/picking.rs",
    docs: &[
        Change::Edit(Edit {
            path: "README.md",
            find: "- `type`: the event type; `payload`: its fields (`amount` 1 to 10^12).",
            replace: "- `type`: the event type; `payload`: its fields. `payment.captured`:\n  `account`, `amount` (1 to 10^12). `order.placed`: `customer`, and\n  `lines`, each a `sku` and a `quantity` (at least 1); a sku may be on\n  several lines.",
        }),
        Change::Edit(Edit {
            path: "src/envelope.rs",
            find: "//! {\"id\": \"pay-0001\", \"type\": \"payment.captured\", \"payload\": {\"account\": 1, \"amount\": 10}}\n",
            replace: "//! {\"id\": \"pay-0001\", \"type\": \"payment.captured\", \"payload\": {\"account\": 1, \"amount\": 10}}\n//! {\"id\": \"ord-0001\", \"type\": \"order.placed\", \"payload\": {\"customer\": 7, \"lines\": [{\"sku\": \"a\", \"quantity\": 1}]}}\n",
        }),
    ],
    red: Red {
        command: &["test", "--test", "conformance", "picking"],
        summary: "test result: FAILED. 0 passed; 4 failed",
        message: "the model gives [Pick {",
    },
    test_names: &[
        "picking::run_twice_picks_each_order_once",
        "picking::parallel_picks_each_order_once",
        "picking::redeliver_after_failure_picks_once",
        "picking::business_key_refuses_a_resent_order_but_picks_both_lines_of_one_sku",
    ],
    weaken: Edit {
        path: "tests/conformance/picking.rs",
        find: "assert_eq!(play.observed.outcomes.failed, 0);",
        replace: "assert!(play.observed.outcomes.failed <= 1);",
    },
    weakened_test: "picking::parallel_picks_each_order_once",
    wrong_keys: &[
        WrongKey {
            name: "no unique key",
            edit: Edit {
                path: SCHEMA,
                find: "    quantity INTEGER NOT NULL,\n    PRIMARY KEY (order_id, line)\n) WITHOUT ROWID;",
                replace: "    quantity INTEGER NOT NULL\n);",
            },
            stopped_by: &[
                "coverage::every_subject_passes_every_required_scenario",
                "picking::business_key_refuses_a_resent_order_but_picks_both_lines_of_one_sku",
            ],
        },
        WrongKey {
            name: "unique per order and sku (too coarse)",
            edit: Edit {
                path: SCHEMA,
                find: PICKS_KEY,
                replace: "    PRIMARY KEY (order_id, sku)\n) WITHOUT ROWID;",
            },
            stopped_by: &[
                "coverage::every_subject_passes_every_required_scenario",
                "picking::business_key_refuses_a_resent_order_but_picks_both_lines_of_one_sku",
                "picking::parallel_picks_each_order_once",
                "picking::redeliver_after_failure_picks_once",
                "picking::run_twice_picks_each_order_once",
            ],
        },
        WrongKey {
            name: "unique per order, line and quantity (too fine)",
            edit: Edit {
                path: SCHEMA,
                find: PICKS_KEY,
                replace: "    PRIMARY KEY (order_id, line, quantity)\n) WITHOUT ROWID;",
            },
            stopped_by: &[
                "coverage::every_subject_passes_every_required_scenario",
                "picking::business_key_refuses_a_resent_order_but_picks_both_lines_of_one_sku",
            ],
        },
    ],
};

impl Consumer {
    fn fixture_text(&self, name: &str) -> String {
        let path = super::kit_root()
            .join("tests/fixtures")
            .join(self.fixture)
            .join(name);
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
    }

    /// The handler with its implementation replaced by the stub.
    pub fn stub(&self) -> String {
        let handler = self.fixture_text(self.handler.fixture);
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
                    let file = root.join(path);
                    let text = fs::read_to_string(&file).expect("file to insert into");
                    let addition = self.fixture_text(fixture);
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
                    let path = root.join(path);
                    let text = fs::read_to_string(&path).expect("file to append to");
                    let addition = self.fixture_text(fixture);
                    if !text.contains(&addition) {
                        fs::write(&path, text + &addition).unwrap();
                    }
                }
                Change::Write(place) => {
                    fs::write(root.join(place.path), self.fixture_text(place.fixture)).unwrap();
                }
            }
        }
    }

    /// Step 3 of `/add-handler`: the subject and the required tests,
    /// declared.
    pub fn write_tests(&self, root: &Path) {
        self.make(root, self.tests);
    }

    /// Step 2: the event, the storage, and the handler as a stub that does
    /// nothing, registered.
    pub fn write_stub(&self, root: &Path) {
        self.make(root, self.scaffolding);
        fs::write(root.join(self.handler.path), self.stub()).unwrap();
    }

    /// Step 6: the real handler (with step 2's scaffolding, if it is not
    /// there yet).
    pub fn write_implementation(&self, root: &Path) {
        self.make(root, self.scaffolding);
        fs::write(
            root.join(self.handler.path),
            self.fixture_text(self.handler.fixture),
        )
        .unwrap();
    }

    /// Step 7: the documentation.
    pub fn write_docs(&self, root: &Path) {
        self.make(root, self.docs);
    }

    /// The new tests' file, as it is now.
    pub fn test_text(&self, root: &Path) -> String {
        fs::read_to_string(root.join(self.tests_file)).expect("the new tests")
    }
}

/// Applies each edit once: an edit whose result is already there is skipped.
pub fn apply(root: &Path, edits: &[Edit]) {
    for edit in edits {
        edit.apply(root);
    }
}

impl Edit {
    pub fn apply(&self, root: &Path) {
        let path = root.join(self.path);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if text.contains(self.replace) {
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
        let path = root.join(self.path);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains(self.replace), "{} was not edited", self.path);
        fs::write(&path, text.replacen(self.replace, self.find, 1)).unwrap();
    }
}
