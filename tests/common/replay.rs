//! The add-a-consumer workflow as data. The kit's tests replay the steps
//! `/add-handler` asks of an agent (the failing tests with a stub handler
//! first, then the implementation) on a generated project, and check what
//! each step should show. The consumer comes from `tests/fixtures/`; to
//! replay another one, describe it in a new [`Consumer`] value.

use std::fs;
use std::path::Path;

/// A new consumer, as files to write and edits to make in a generated
/// project.
pub struct Consumer {
    /// Folder under `tests/fixtures/` holding the files below.
    pub fixture: &'static str,
    /// The handler. Its lines between `// implementation: begin` and
    /// `// implementation: end` are the implementation; the stub replaces
    /// them with [`Consumer::stub_body`].
    pub handler: Place,
    /// Signature edits that make the stub compile without warnings.
    pub stub_signature: &'static [(&'static str, &'static str)],
    pub stub_body: &'static str,
    /// Edits that register the handler with the crate.
    pub register: &'static [Edit],
    /// Test support (the harness subject), appended to existing files.
    pub support: &'static [Append],
    /// The required tests, and the edits that declare them.
    pub tests: Place,
    pub declare_tests: &'static [Edit],
    /// What running the tests against the stub shows.
    pub red: Red,
    /// Full names of the new tests.
    pub test_names: &'static [&'static str],
    /// An edit that weakens one new test (for the red-before-green check).
    pub weaken: Edit,
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

pub struct Append {
    pub path: &'static str,
    pub fixture: &'static str,
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

/// A `loyalty` consumer: one point per 10 paid, for the paying account.
pub const LOYALTY: Consumer = Consumer {
    fixture: "loyalty",
    handler: Place {
        fixture: "handler.rs",
        path: "src/handlers/loyalty.rs",
    },
    stub_signature: &[(
        "(&self, db: &Connection, message: &Message)",
        "(&self, _db: &Connection, _message: &Message)",
    )],
    stub_body: "        Ok(())\n",
    register: &[
        Edit {
            path: "src/handlers/mod.rs",
            find: "mod debit;\n",
            replace: "mod debit;\nmod loyalty;\n",
        },
        Edit {
            path: "src/handlers/mod.rs",
            find: "pub use debit::{Debit, balance, balances, open_account};\n",
            replace: "pub use debit::{Debit, balance, balances, open_account};\npub use loyalty::{Loyalty, points};\n",
        },
        Edit {
            path: "src/handlers/mod.rs",
            find: "vec![Arc::new(Debit), Arc::new(Notify)]",
            replace: "vec![Arc::new(Debit), Arc::new(Notify), Arc::new(Loyalty)]",
        },
    ],
    support: &[Append {
        path: "tests/support/subjects.rs",
        fixture: "subject.rs",
    }],
    tests: Place {
        fixture: "test.rs",
        path: "tests/conformance/loyalty.rs",
    },
    declare_tests: &[Edit {
        path: "tests/conformance/main.rs",
        find: "mod consumers;\n",
        replace: "mod consumers;\nmod loyalty;\n",
    }],
    red: Red {
        command: &["test", "--test", "conformance", "loyalty"],
        summary: "test result: FAILED. 0 passed; 3 failed",
        message: "50 payments of 10 give 50 points",
    },
    test_names: &[
        "loyalty::run_twice_awards_each_payment_once",
        "loyalty::parallel_awards_each_payment_once",
        "loyalty::redeliver_after_failure_awards_once",
    ],
    weaken: Edit {
        path: "tests/conformance/loyalty.rs",
        find: "assert_eq!(observed.outcomes.failed, 0);",
        replace: "assert!(observed.outcomes.failed <= 1);",
    },
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

    /// Step 2 of `/add-handler`, tests half: the subject and the required
    /// tests, declared.
    pub fn write_tests(&self, root: &Path) {
        for append in self.support {
            let path = root.join(append.path);
            let text = fs::read_to_string(&path).expect("file to append to");
            fs::write(&path, text + &self.fixture_text(append.fixture)).unwrap();
        }
        fs::write(
            root.join(self.tests.path),
            self.fixture_text(self.tests.fixture),
        )
        .unwrap();
        apply(root, self.declare_tests);
    }

    /// Step 2, code half: the handler as a stub that does nothing, registered.
    pub fn write_stub(&self, root: &Path) {
        fs::write(root.join(self.handler.path), self.stub()).unwrap();
        apply(root, self.register);
    }

    /// Step 5: the real handler (registered, if the stub did not do it).
    pub fn write_implementation(&self, root: &Path) {
        fs::write(
            root.join(self.handler.path),
            self.fixture_text(self.handler.fixture),
        )
        .unwrap();
        apply(root, self.register);
    }

    /// The new tests' files, as they are now.
    pub fn test_text(&self, root: &Path) -> String {
        fs::read_to_string(root.join(self.tests.path)).expect("the new tests")
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
