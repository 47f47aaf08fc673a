//! Poison messages: a payment for an account that does not exist fails
//! every time it is delivered.

use {{crate_name}}::envelope::Wire;
use {{crate_name}}::event::{Event, PaymentCaptured};
use {{crate_name}}::handlers::Debit;
use {{crate_name}}::inbox::{DeadLetter, DeadLetters, Delivery, Outcome, Policy};
use {{crate_name}}::message::{Message, MessageId};
use {{crate_name}}::store::Store;

use crate::support::broken::AttemptsCountedInside;
use crate::support::database::Fixture;
use crate::support::harness::{
    InboxUnderTest, RealInbox, ThisProject, deliver_all, fixture_for, inbox_rows,
};
use crate::support::subjects::{ACCOUNT, DebitSubject, payments};

const MISSING_ACCOUNT: i64 = 999;

fn poison() -> Message {
    Message {
        id: MessageId::new("pay-poison").unwrap(),
        event: Event::PaymentCaptured(PaymentCaptured {
            account: MISSING_ACCOUNT,
            amount: 10,
        }),
        trace_parent: None,
    }
}

/// Delivers a healthy payment and the poison one `rounds` times through
/// `inbox` and returns the outcomes of the poison deliveries.
fn deliver_rounds(
    inbox: &dyn InboxUnderTest<ThisProject>,
    fixture: &Fixture,
    rounds: usize,
) -> Vec<Outcome> {
    let mut worker = inbox.open(fixture);
    let messages = [payments(1).remove(0), poison()];
    (0..rounds)
        .map(|_| {
            let deliveries: Vec<_> = messages
                .iter()
                .map(|message| Delivery::new(&Debit, message))
                .collect();
            let mut outcomes = worker.deliver_batch(&deliveries).expect("no storage error");
            outcomes.pop().expect("the poison outcome")
        })
        .collect()
}

fn is_dead_lettered(outcomes: &[Outcome], max_attempts: usize) -> bool {
    let failed_first = outcomes[..max_attempts - 1]
        .iter()
        .all(|o| matches!(o, Outcome::Failed(_)));
    failed_first
        && matches!(outcomes[max_attempts - 1], Outcome::DeadLettered(_))
        && outcomes[max_attempts..]
            .iter()
            .all(|o| *o == Outcome::Duplicate)
}

fn dead_letters(fixture: &Fixture) -> Vec<DeadLetter> {
    let mut inbox = fixture.database().inbox(Policy::default()).unwrap();
    inbox.dead_letters().unwrap()
}

fn poison_failures(fixture: &Fixture) -> u32 {
    let mut inbox = fixture.database().inbox(Policy::default()).unwrap();
    inbox.failures("debit", "pay-poison").unwrap()
}

fn balances(fixture: &Fixture) -> Vec<(i64, i64)> {
    fixture
        .database()
        .with_tables(|tables| tables.balances())
        .unwrap()
}

#[test]
fn a_poison_message_is_dead_lettered_after_max_attempts_and_blocks_nothing() {
    let inbox = RealInbox::BATCHED;
    let fixture = fixture_for(&inbox, &[&DebitSubject::real()]);
    let outcomes = deliver_rounds(&inbox, &fixture, 7);
    assert!(is_dead_lettered(&outcomes, 5), "{outcomes:?}");

    assert_eq!(
        balances(&fixture),
        vec![(ACCOUNT, 990)],
        "the healthy payment applied once"
    );
    let letters = dead_letters(&fixture);
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].message_id, "pay-poison");
    assert_eq!(letters[0].attempts, 5);
    assert_eq!(letters[0].error, "account 999 does not exist");
    assert_eq!(
        Event::decode(&letters[0].event_type, &letters[0].payload).unwrap(),
        poison().event
    );
    assert_eq!(poison_failures(&fixture), 0, "the count is cleared");
    assert_eq!(
        inbox_rows(&fixture, "debit"),
        2,
        "redeliveries of the dead letter are duplicates"
    );
}

#[test]
fn failed_attempts_are_counted_although_the_attempt_rolls_back() {
    let inbox = RealInbox::ONE_PER_TRANSACTION;
    let fixture = fixture_for(&inbox, &[&DebitSubject::real()]);
    deliver_rounds(&inbox, &fixture, 2);
    assert_eq!(poison_failures(&fixture), 2);
    assert_eq!(
        inbox_rows(&fixture, "debit"),
        1,
        "only the healthy payment is recorded"
    );
}

#[test]
fn attempts_counted_inside_the_rolled_back_transaction_are_caught() {
    let fixture = fixture_for(&AttemptsCountedInside, &[&DebitSubject::real()]);
    let outcomes = deliver_rounds(&AttemptsCountedInside, &fixture, 7);
    assert!(
        !is_dead_lettered(&outcomes, 5),
        "the broken count dead-lettered: {outcomes:?}"
    );
    assert_eq!(poison_failures(&fixture), 0);
}

fn dead_letter_one() -> Fixture {
    let fixture = fixture_for(&RealInbox::ONE_PER_TRANSACTION, &[&DebitSubject::real()]);
    deliver_rounds(&RealInbox::ONE_PER_TRANSACTION, &fixture, 5);
    fixture
}

#[test]
fn a_redriven_dead_letter_applies_once_when_its_cause_is_fixed() {
    let fixture = dead_letter_one();
    let database = fixture.database();
    database
        .with_tables(|tables| tables.open_account(MISSING_ACCOUNT, 100))
        .unwrap();

    let mut inbox = database.inbox(Policy::default()).unwrap();
    assert_eq!(inbox.redrive(&Debit, &poison()).unwrap(), Outcome::Applied);
    assert_eq!(
        balances(&fixture),
        vec![(ACCOUNT, 990), (MISSING_ACCOUNT, 90)]
    );
    assert!(dead_letters(&fixture).is_empty());
    // The broker redelivers it once more: a duplicate, not a second debit.
    let again = deliver_all(&mut inbox, &Debit, &[poison()]);
    assert_eq!(again.duplicate, 1);
    assert_eq!(
        balances(&fixture),
        vec![(ACCOUNT, 990), (MISSING_ACCOUNT, 90)]
    );
}

#[test]
fn a_redrive_that_fails_again_leaves_the_dead_letter_as_it_was() {
    let fixture = dead_letter_one();
    let before = dead_letters(&fixture);

    let outcome = fixture
        .database()
        .inbox(Policy::default())
        .unwrap()
        .redrive(&Debit, &poison())
        .unwrap();
    assert!(matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
    assert_eq!(dead_letters(&fixture), before);
    assert_eq!(
        inbox_rows(&fixture, "debit"),
        2,
        "still a duplicate for the broker"
    );
    assert_eq!(poison_failures(&fixture), 0);
}

/// The same story through the command line: `run` dead-letters the poison
/// line after `--max-attempts`, `dead-letters list` shows it, and
/// `dead-letters redrive` applies it once its account exists.
#[test]
fn the_command_line_lists_and_redrives_dead_letters() {
    let fixture = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let lines: Vec<String> = [(1, "pay-good"), (MISSING_ACCOUNT, "pay-poison")]
        .iter()
        .map(|(account, id)| {
            serde_json::json!({
                "id": id,
                "type": "payment.captured",
                "payload": { "account": account, "amount": 10 },
            })
            .to_string()
        })
        .collect();
    std::fs::write(&input, lines.join("\n")).unwrap();
    let run = |args: &[&str]| {
        let output = crate::run_consumer(&fixture, args);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    let input = input.to_str().unwrap();
    assert_eq!(run(&["open-account", "1", "100"]).0, Some(0));

    let first = run(&["run", input, "--max-attempts", "2"]);
    assert_eq!(
        first,
        (
            Some(4),
            "applied=3 duplicate=0 failed=1 rejected=0 dead_lettered=0 refused=0\n".into()
        )
    );
    let second = run(&["run", input, "--max-attempts", "2"]);
    assert_eq!(
        second,
        (
            Some(4),
            "applied=0 duplicate=3 failed=0 rejected=0 dead_lettered=1 refused=0\n".into()
        )
    );
    let third = run(&["run", input, "--max-attempts", "2"]);
    assert_eq!(
        third.1,
        "applied=0 duplicate=4 failed=0 rejected=0 dead_lettered=0 refused=0\n"
    );

    let listed = run(&["dead-letters", "list"]);
    assert!(
        listed
            .1
            .contains(r#"debit pay-poison attempts=2 error="account 999 does not exist""#),
        "{}",
        listed.1
    );
    // A consumer nobody has is a usage error (exit code 2), and nothing
    // is redriven: the redrive below still finds the letter.
    let unknown = run(&["dead-letters", "redrive", "--consumer", "nope"]);
    assert_eq!(unknown, (Some(2), String::new()));
    let still_broken = run(&["dead-letters", "redrive"]);
    assert_eq!(still_broken.0, Some(4));
    assert!(
        still_broken.1.contains("debit pay-poison: failed again"),
        "{}",
        still_broken.1
    );

    assert_eq!(run(&["open-account", "999", "100"]).0, Some(0));
    let fixed = run(&["dead-letters", "redrive"]);
    assert_eq!(fixed.0, Some(0));
    assert!(
        fixed.1.contains("redriven applied=1 still_failing=0"),
        "{}",
        fixed.1
    );
    let status = run(&["status"]).1;
    assert!(status.contains("account 999 balance=90"), "{status}");
    // Both payments are in the debit inbox now (the good one applied, the
    // poison one redriven), and `status` counts what the table holds.
    assert_eq!(inbox_rows(&fixture, "debit"), 2);
    for consumer in ["debit", "notify"] {
        let line = format!(
            "inbox {consumer} messages={}",
            inbox_rows(&fixture, consumer)
        );
        assert!(status.contains(&line), "no `{line}` in:\n{status}");
    }
    assert!(run(&["dead-letters", "list"]).1.contains("dead_letters=0"));
}
