//! The second process's side: what this test binary does when it was
//! started as a scenario's second process (the restart's second round, or
//! its share of the rules-across-messages rounds).

use inbox_kit_runtime::handler::pick;

use super::process::{ASSIGNMENT, Assignment};
use crate::harness::{Fixture, InboxUnderTest, Project, hangs};

/// Plays the second process's part when this process is one (its
/// assignment is in the environment); does nothing otherwise.
/// `inbox_named` finds the inbox under test by its name.
pub fn serve_second_process<P: Project>(
    inbox_named: impl Fn(&str) -> Option<Box<dyn InboxUnderTest<P>>>,
) {
    let Ok(assignment) = std::env::var(ASSIGNMENT) else {
        println!("only a scenario's second process does something here");
        return;
    };
    let value: serde_json::Value = serde_json::from_str(&assignment).expect("assignment");
    let field = |name: &str| value[name].as_str().expect("assignment field").to_owned();
    let inbox = inbox_named(&field("inbox"))
        .unwrap_or_else(|| panic!("no inbox under test named {:?}", field("inbox")));
    let consumer = field("consumer");
    // `pick` checks every consumer first: two sharing a name would
    // otherwise hand this process the wrong one, and its failure would
    // blame the scenario instead of the name.
    let handlers = P::handlers();
    let names: Vec<&str> = handlers.iter().map(|handler| handler.consumer()).collect();
    let at = pick(std::slice::from_ref(&consumer), &names)
        .unwrap_or_else(|error| panic!("the second process cannot find its consumer: {error}"))[0];
    let handler = handlers[at].clone();
    let kind = field("kind");
    let _scenario = hangs::scenario(format!(
        "the second process of `{kind}` via {}, for `{consumer}`",
        inbox.name()
    ));
    let assignment = Assignment {
        fixture: P::Fixture::attach(&field("fixture")),
        inbox,
        handler,
        value,
    };
    match kind.as_str() {
        "restart" => super::restart::second_round(&assignment),
        "serial" => super::serial::second_process_rounds(&assignment),
        other => panic!("no scenario's second process is {other:?}"),
    }
}
