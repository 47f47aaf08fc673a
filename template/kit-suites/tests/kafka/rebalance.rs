//! A rebalance while records are in the workers' hands: the first member
//! of the group holds one record in a transaction until the second member's
//! arrival has revoked its partitions; it must finish what it took and
//! commit it before letting the partitions go, so that nothing is read
//! twice.
//!
//! On tansu 0.6.0 the second member's arrival revokes the first member's
//! partitions and then gives them all back to it (the second gets none),
//! and a source that releases without finishing was not caught here (no
//! record came twice): this test shows the revoke path finishes and
//! commits, not yet that it is needed. On Apache Kafka the partitions
//! split between the two.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};

use {{crate_name}}::event::Event;
use {{crate_name}}::handler::{Handler, HandlerError, Subscriber};
use {{crate_name}}::handlers::{AnyHandler, Debit, Tables};
use {{crate_name}}::inbox::Policy;
use {{crate_name}}::message::Message;

use crate::group::{publish_spread, spread_problems};
use crate::support::harness::{RealInbox, fixture_for};
use crate::support::kafka::Broker;
use crate::support::subjects::DebitSubject;
use crate::{GROUP, Running, SourceKind, real_inbox, wait_for};

/// A gate the first record's transaction waits at until it is opened.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Gate {
    /// Whether a transaction is waiting at it.
    fn entered(&self) -> bool {
        self.state.lock().unwrap().0
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }

    /// The first caller waits until the gate opens; the others pass.
    fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        if state.0 {
            return;
        }
        state.0 = true;
        while !state.1 {
            state = self.changed.wait(state).unwrap();
        }
    }
}

/// Debits, the first record waiting at the gate (inside its transaction).
struct Gated(Arc<Gate>);

impl Subscriber<Event> for Gated {
    fn consumer(&self) -> &'static str {
        Debit.consumer()
    }

    fn subscribes_to(&self, event: &Event) -> bool {
        Debit.subscribes_to(event)
    }
}

impl<'t> Handler<Event, dyn Tables + 't> for Gated {
    fn apply(&self, tables: &mut (dyn Tables + 't), message: &Message) -> Result<(), HandlerError> {
        self.0.pass();
        Debit.apply(tables, message)
    }
}

/// Runs the scenario with two members of `kind`; returns what is wrong
/// with the end state.
pub fn rebalance_while_in_hand(kind: SourceKind) -> Vec<String> {
    let broker = Broker::start();
    let fixture = fixture_for(&RealInbox::BATCHED, &[&DebitSubject::real()]);
    publish_spread(&broker, &fixture);
    let gate = Arc::new(Gate::default());
    let policy = Policy::default();
    let first = Running::start(
        &broker,
        kind,
        vec![Arc::new(Gated(gate.clone())) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
    );
    assert!(wait_for(|| gate.entered()), "the first member took nothing");
    let second = Running::start(
        &broker,
        kind,
        vec![Arc::new(Debit) as Arc<AnyHandler>],
        real_inbox(&fixture, policy),
    );
    let counts = first.counts.clone().expect("counts");
    let rebalanced = wait_for(|| counts.revoked.load(Ordering::Relaxed) > 0);
    gate.open();
    assert!(rebalanced, "the second member's arrival revoked nothing");
    let drained = wait_for(|| broker.uncommitted(GROUP) == 0);
    let (first, second) = (first.stop(&broker, drained), second.stop(&broker, drained));
    println!(
        "first: {} (revoked {}); second: {}",
        first.report.summary, first.revoked, second.report.summary
    );
    let mut problems = Vec::new();
    if !drained {
        problems.push("the group did not commit the topic".to_owned());
    }
    let duplicates = first.report.summary.duplicate + second.report.summary.duplicate;
    if duplicates > 0 {
        problems.push(format!(
            "{duplicates} records read twice: a partition was released before what was taken of it committed"
        ));
    }
    problems.extend(spread_problems(&fixture));
    problems
}

#[test]
fn a_rebalance_finishes_and_commits_what_was_taken_before_releasing() {
    let problems = rebalance_while_in_hand(SourceKind::Real);
    assert!(problems.is_empty(), "{}", problems.join("; "));
}
