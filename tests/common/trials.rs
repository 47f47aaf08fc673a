//! The kit's tests that need a server, as trials of a test harness of our
//! own (libtest-mimic), so that a test that could not run what its name
//! promises is never reported as passed.
//!
//! libtest captures what a test prints and has no way to ignore a test
//! once it runs: a test that found its server missing could only pass
//! quietly. Here such a trial is reported as `ignored (NOT RUN: ...)`, with
//! what it needed, and listed again after the summary, in the default
//! output of `cargo test`. With `INBOX_KIT_REQUIRE_SERVERS=1` (what
//! `.ci/run` sets) it fails instead.

use std::process::ExitCode;
use std::sync::Mutex;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use super::{Variant, missing_servers};

/// Trials that did not run, for the list after the summary.
static NOT_RUN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A test binary's trials.
#[derive(Default)]
pub struct Trials(Vec<Trial>);

impl Trials {
    /// A trial that needs nothing but this machine.
    pub fn test(mut self, name: &str, body: impl FnOnce() + Send + 'static) -> Self {
        self.0.push(Trial::test(name, move || {
            body();
            Ok(())
        }));
        self
    }

    /// A trial that needs `variant`'s servers for its body. Without them
    /// it runs `without` (what can be checked anyway, such as a build) and
    /// is reported as not run, saying what was missing.
    pub fn needs(
        mut self,
        variant: &'static Variant,
        name: &str,
        without: impl FnOnce() + Send + 'static,
        body: impl FnOnce() + Send + 'static,
    ) -> Self {
        let name_owned = name.to_owned();
        self.0.push(Trial::ignorable_test(name, move || {
            let missing = missing_servers(variant);
            if missing.is_empty() {
                body();
                return Ok(Completion::Completed);
            }
            let reason = format!(
                "NOT RUN: needs {} (not available here)",
                missing.join(" and ")
            );
            if std::env::var_os("INBOX_KIT_REQUIRE_SERVERS").is_some() {
                return Err(Failed::from(format!(
                    "{reason}, and INBOX_KIT_REQUIRE_SERVERS is set"
                )));
            }
            without();
            NOT_RUN
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(format!("{name_owned}: {reason}"));
            Ok(Completion::ignored_with(reason))
        }));
        self
    }

    /// Runs the trials the command line selects, then lists those that did
    /// not run.
    pub fn run(self) -> ExitCode {
        let conclusion = libtest_mimic::run(&Arguments::from_args(), self.0);
        let not_run = NOT_RUN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !not_run.is_empty() {
            println!("{} test(s) NOT RUN, reported as ignored:", not_run.len());
            for line in not_run.iter() {
                println!("  {line}");
            }
            println!();
        }
        conclusion.exit_code()
    }
}
