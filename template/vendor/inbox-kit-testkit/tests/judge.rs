//! The judge on a project of its own: a ledger in memory, whose handler
//! adds each message's amount and refuses a negative one after writing
//! it. Checks the once-only route (each message applied once on a fresh
//! database, a refusal's writes rolled back), the judge's verdict on a
//! play, and what `observe` reads back from a fixture.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::envelope::{InvalidEvent, Wire};
use inbox_kit_runtime::handler::{Handler, HandlerError, Refused, Registry, Subscriber};
use inbox_kit_runtime::inbox::{DeadLetter, Policy};
use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::pipeline::Summary;
use inbox_kit_runtime::storage::StorageError;
use inbox_kit_testkit::harness::{
    Conflicts, Expected, Fixture, HeldClaim, LettersOf, Model, Play, Project, Raw, Scratch, Seed,
    Subject, Tripwires, applied_once_problems, assert_applied_once, facts, observe, state_of,
};

/// The tables of the ledger project: amounts, in order.
trait Ledger {
    fn add(&mut self, amount: i64);
    fn amounts(&self) -> Vec<i64>;
}

impl Ledger for Vec<i64> {
    fn add(&mut self, amount: i64) {
        self.push(amount);
    }
    fn amounts(&self) -> Vec<i64> {
        self.clone()
    }
}

/// The ledger's one event: an amount to add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Amount(i64);

impl Wire for Amount {
    fn decode(kind: &str, payload: &str) -> Result<Self, InvalidEvent> {
        if kind != "Amount" {
            return Err(InvalidEvent::UnknownType(kind.to_owned()));
        }
        payload
            .parse()
            .map(Amount)
            .map_err(|error| InvalidEvent::BadPayload {
                kind: "Amount",
                reason: format!("{error}"),
            })
    }
    fn encode(&self) -> (&'static str, String) {
        ("Amount", self.0.to_string())
    }
}

type BorrowedHandler<'a> = dyn for<'t> Handler<Amount, dyn Ledger + 't> + 'a;
type AnyHandler = BorrowedHandler<'static>;

/// The ledger's handlers, as the runtime's inboxes would know them.
struct Adders;

impl Registry for Adders {
    type Event = Amount;
    type Handler<'a> = BorrowedHandler<'a>;

    fn has_set_based(handler: &BorrowedHandler<'_>) -> bool {
        handler.set_based().is_some()
    }
    fn encode(event: &Amount) -> (&'static str, String) {
        event.encode()
    }
    fn partition_key(_event: &Amount) -> u64 {
        0
    }
    fn lend<'a>(handler: &'a AnyHandler) -> &'a BorrowedHandler<'a> {
        handler
    }
}

/// Adds each amount; refuses a negative one, after writing it; fails for
/// good on 13 when `unlucky`.
struct Adder {
    unlucky: bool,
}

impl Subscriber<Amount> for Adder {
    fn consumer(&self) -> &'static str {
        "adder"
    }
    fn subscribes_to(&self, _event: &Amount) -> bool {
        true
    }
}

impl<T: Ledger + ?Sized> Handler<Amount, T> for Adder {
    fn apply(&self, tables: &mut T, message: &Message<Amount>) -> Result<(), HandlerError> {
        let Amount(amount) = message.event;
        tables.add(amount);
        if amount < 0 {
            return Err(Refused::because("a negative amount").into());
        }
        if self.unlucky && amount == 13 {
            return Err("13 never works".into());
        }
        Ok(())
    }
}

struct Ledgers;

/// A ledger "database": the committed amounts, dead letters and failures.
#[derive(Default)]
struct Memory {
    amounts: Mutex<Vec<i64>>,
    inbox: Vec<(String, String)>,
    letters: Vec<DeadLetter>,
    failures: BTreeMap<String, u64>,
}

impl Project for Ledgers {
    type Event = Amount;
    type Tables<'t> = dyn Ledger + 't;
    type Registry = Adders;
    type Fixture = Memory;

    fn handlers() -> Vec<Arc<AnyHandler>> {
        vec![Arc::new(Adder { unlucky: false })]
    }
}

/// A fresh ledger whose attempts are rolled back when they fail.
struct Scratched(Vec<i64>);

impl Scratch<Ledgers> for Scratched {
    fn attempt(
        &mut self,
        step: &mut dyn FnMut(&mut (dyn Ledger + '_)) -> Result<(), HandlerError>,
    ) -> Result<(), HandlerError> {
        let mut copy = self.0.clone();
        step(&mut copy)?;
        self.0 = copy;
        Ok(())
    }
    fn read(&mut self, read: &mut dyn FnMut(&mut (dyn Ledger + '_))) {
        read(&mut self.0);
    }
}

/// The judge's tests read a fixture: they set off no fault.
impl Tripwires<Adders> for Memory {
    fn fail_commits(&self, _on: bool) {
        unreachable!("no fault is set off")
    }
    fn refuse_claims(&self, _message_ids: &[&str]) {
        unreachable!("no fault is set off")
    }
    fn heal_claims(&self) {
        unreachable!("no fault is set off")
    }
    fn hold_claim(&self, _consumer: &str, _id: &str) -> Box<dyn HeldClaim> {
        unreachable!("no fault is set off")
    }
    fn conflicts(&self) -> Option<Box<dyn Conflicts + '_>> {
        None
    }
    fn impatient_inbox(&self, _policy: Policy, _wait: Duration) -> Box<dyn Inbox<Adders>> {
        unreachable!("no fault is set off")
    }
}

impl Fixture<Ledgers> for Memory {
    const CONCURRENT_WRITERS: bool = false;

    fn new() -> Self {
        Self::default()
    }
    fn location(&self) -> String {
        unreachable!("a ledger in memory is in no other process")
    }
    fn attach(_location: &str) -> Self {
        unreachable!("a ledger in memory is in no other process")
    }
    fn waiting_on_locks(&self) -> usize {
        0
    }
    fn identity(&self) -> String {
        "memory".to_owned()
    }
    fn execute(&self, _sql: &str) {
        unreachable!("a ledger in memory has no SQL")
    }
    fn with_tables<T>(
        &self,
        work: impl FnOnce(&mut (dyn Ledger + '_)) -> Result<T, StorageError>,
    ) -> T {
        work(&mut *self.amounts.lock().unwrap()).expect("the tables")
    }
    fn inbox_rows(&self, consumer: &str) -> usize {
        self.inbox.iter().filter(|(c, _)| c == consumer).count()
    }
    fn dead_letters(&self) -> Vec<DeadLetter> {
        self.letters.clone()
    }
    fn failures_counted(&self, consumer: &str) -> u64 {
        self.failures.get(consumer).copied().unwrap_or(0)
    }
    fn inbox(&self, _policy: Policy) -> LettersOf<Ledgers> {
        unreachable!("the judge's tests read a fixture; they deliver nothing")
    }
    fn purge(
        &self,
        _older_than: std::time::Duration,
        _keys_per_transaction: u32,
        _progress: &mut dyn FnMut(u64),
    ) -> inbox_kit_runtime::store::Purged {
        unreachable!("the judge's tests read a fixture; they write nothing")
    }
    fn raw(&self) -> Box<dyn Raw<Ledgers>> {
        unreachable!("the judge's tests read a fixture; they write nothing")
    }
    fn raw_waiting_forever(&self) -> Box<dyn Raw<Ledgers>> {
        unreachable!("the judge's tests read a fixture; they write nothing")
    }
    fn scratch<T>(work: impl FnOnce(&mut dyn Scratch<Ledgers>) -> T) -> T {
        work(&mut Scratched(Vec::new()))
    }
}

struct AdderSubject {
    unlucky: bool,
}

impl Subject for AdderSubject {
    type Project = Ledgers;
    type State = Vec<i64>;

    fn handler(&self) -> Arc<AnyHandler> {
        Arc::new(Adder {
            unlucky: self.unlucky,
        })
    }
    fn seed(&self, tables: &mut (dyn Ledger + '_)) -> Result<(), StorageError> {
        tables.add(100);
        Ok(())
    }
    fn fact(&self, id: MessageId, n: usize) -> Message<Amount> {
        message(id.as_str(), n as i64)
    }
    fn resend(&self, message: &Message<Amount>) -> Message<Amount> {
        message.clone()
    }
    fn repeat(&self, _message: &Message<Amount>, _id: MessageId) -> Option<Message<Amount>> {
        None
    }
    fn state(&self, tables: &mut (dyn Ledger + '_)) -> Result<Vec<i64>, StorageError> {
        Ok(tables.amounts())
    }
    fn model(&self, messages: &[Message<Amount>]) -> Model<Vec<i64>> {
        let mut model = Model::applied(vec![100]);
        for message in messages {
            let Amount(amount) = message.event;
            if amount < 0 {
                model
                    .refused
                    .insert(message.id.to_string(), "a negative amount".to_owned());
            } else {
                model.state.push(amount);
            }
        }
        model
    }
}

fn message(id: &str, amount: i64) -> Message<Amount> {
    Message {
        id: MessageId::new(id).unwrap(),
        event: Amount(amount),
        trace_parent: None,
    }
}

#[test]
fn once_only_applies_each_distinct_message_once_and_rolls_a_refusal_back() {
    let subject = AdderSubject { unlucky: false };
    let applied = [
        message("a", 5),
        message("b", -1),
        message("a", 5),
        message("c", 7),
    ];
    let expected = Expected::of(&subject, &applied).expect("no handler failure");
    assert_eq!(expected.once_only.state, [100, 5, 7]);
    assert_eq!(
        expected.once_only.refused.keys().collect::<Vec<_>>(),
        ["b"],
        "the refusal is listed, and its write rolled back"
    );
    assert_eq!(expected.once_only, expected.model);
}

#[test]
fn a_handler_that_fails_on_its_own_is_a_violation_naming_it() {
    let subject = AdderSubject { unlucky: true };
    let violation = Expected::of(&subject, &[message("a", 13)]).expect_err("13 fails");
    assert!(
        violation
            .0
            .contains("`adder` fails even when each message is applied once")
            && violation.0.contains("13 never works"),
        "{violation:?}"
    );
}

#[test]
fn a_play_is_judged_against_what_the_fixture_holds() {
    let subject = AdderSubject { unlucky: false };
    let mut fixture = Memory::default();
    fixture.amounts.lock().unwrap().extend([100, 5]);
    fixture.inbox = vec![
        ("adder".to_owned(), "a".to_owned()),
        ("adder".to_owned(), "b".to_owned()),
        ("other".to_owned(), "a".to_owned()),
    ];
    let letter = |consumer: &str, refused| DeadLetter {
        consumer: consumer.to_owned(),
        message_id: "b".to_owned(),
        event_type: "amount".to_owned(),
        payload: "-1".to_owned(),
        error: "a negative amount".to_owned(),
        attempts: 1,
        refused,
        dead_at: 0,
    };
    fixture.letters = vec![letter("adder", true), letter("other", false)];
    fixture.failures.insert("adder".to_owned(), 2);
    let outcomes = Summary {
        applied: 1,
        refused: 1,
        duplicate: 1,
        ..Summary::default()
    };
    let observed = observe(&fixture, &subject, outcomes);
    assert_eq!(observed.inbox_rows, 2, "only the subject's consumer counts");
    assert_eq!(observed.dead_letters.len(), 1, "only the subject's letters");
    assert_eq!(observed.attempts, 2);
    assert_eq!(state_of(&fixture, &subject), [100, 5]);
    let play = |observed| Play {
        scenario: "run twice".to_owned(),
        consumer: "adder".to_owned(),
        messages: vec![message("a", 5), message("b", -1), message("a", 5)],
        deliveries: 3,
        steps: Vec::new(),
        observed,
    };
    play(observed).judge(&subject).expect("each message once");
    fixture.amounts.lock().unwrap().push(5);
    let twice = observe(&fixture, &subject, outcomes);
    let violation = play(twice).judge(&subject).expect_err("applied twice");
    assert!(
        violation.0.contains("state is [100, 5, 5]"),
        "{violation:?}"
    );
}

/// A refused letter of `consumer` for message `id`.
fn refusal(consumer: &str, id: &str) -> DeadLetter {
    DeadLetter {
        consumer: consumer.to_owned(),
        message_id: id.to_owned(),
        event_type: "amount".to_owned(),
        payload: "-1".to_owned(),
        error: "a negative amount".to_owned(),
        attempts: 1,
        refused: true,
        dead_at: 0,
    }
}

#[test]
fn applied_once_holds_the_state_and_this_consumers_refusals() {
    let subject = AdderSubject { unlucky: false };
    let applied = [message("a", 5), message("b", -1)];
    let mut fixture = Memory::default();
    fixture.amounts.lock().unwrap().extend([100, 5]);
    fixture.letters = vec![refusal("adder", "b"), refusal("other", "c")];
    assert_eq!(
        applied_once_problems(&fixture, &subject, &applied),
        Vec::<String>::new()
    );
    assert_applied_once(&fixture, &subject, &applied);

    fixture.letters = vec![refusal("other", "b")];
    let problems = applied_once_problems(&fixture, &subject, &applied);
    assert_eq!(problems.len(), 2, "one per route: {problems:?}");
    assert!(
        problems[0].starts_with("the handler refused {}"),
        "{problems:?}"
    );

    fixture.letters = vec![refusal("adder", "b")];
    fixture.amounts.lock().unwrap().push(5);
    let twice = std::panic::catch_unwind(|| assert_applied_once(&fixture, &subject, &applied));
    let message = *twice
        .expect_err("applied twice")
        .downcast::<String>()
        .unwrap();
    assert!(
        message.starts_with("adder is not each message applied once: state is [100, 5, 5]"),
        "{message}"
    );
}

#[test]
fn facts_are_numbered_from_one_under_the_prefix() {
    let subject = AdderSubject { unlucky: false };
    let made = facts(&subject, "m-", 3);
    let ids: Vec<&str> = made.iter().map(|message| message.id.as_str()).collect();
    assert_eq!(ids, ["m-00001", "m-00002", "m-00003"]);
    let amounts: Vec<i64> = made.iter().map(|message| message.event.0).collect();
    assert_eq!(amounts, [0, 1, 2], "the n-th fact is made with n");
}

#[test]
fn a_subject_seeds_through_its_seed() {
    let subject = AdderSubject { unlucky: false };
    let seed: &dyn Seed<Ledgers> = &subject;
    let mut tables = Vec::new();
    seed.seed_tables(&mut tables).unwrap();
    assert_eq!(tables, [100]);
    assert_eq!(seed.seed_handler().consumer(), "adder");
    assert!(
        subject.contended(0).is_empty(),
        "no rules across messages by default"
    );
    assert!(subject.cannot_apply(MessageId::new("x").unwrap()).is_none());
}
