//! **Exact ids**: message ids are compared byte for byte. Distinct messages
//! whose ids differ only in letter case, in surrounding whitespace, in
//! Unicode normalization, or in the last byte of a maximum-length id must
//! each be applied; an inbox that folds, trims, normalizes or truncates ids
//! merges them and loses messages.

use inbox_kit_runtime::message::{MAX_MESSAGE_ID_BYTES, Message, MessageId};

use crate::harness::EventOf;
use crate::harness::deliver_all;
use crate::harness::{
    InboxUnderTest, Play, PlayOf, Subject, Violation, fixture_for, hangs, observe,
};

/// Ids that are all different, byte for byte, though a careless inbox would
/// think some of them equal.
pub fn tricky_ids() -> Vec<String> {
    let longest = |last: char| "x".repeat(MAX_MESSAGE_ID_BYTES - 1) + &last.to_string();
    vec![
        "order-a1".to_owned(),
        "Order-A1".to_owned(),
        "ORDER-A1".to_owned(),
        "pad".to_owned(),
        " pad".to_owned(),
        "pad ".to_owned(),
        "caf\u{e9}".to_owned(),   // é as one code point (NFC)
        "cafe\u{301}".to_owned(), // e + combining acute accent (NFD)
        longest('a'),
        longest('b'),
    ]
}

/// A new fact of the subject under each of the [`tricky_ids`], delivered
/// twice.
pub fn play_exact_ids<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "exact ids via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let ids = tricky_ids();
    let messages: Vec<Message<EventOf<S>>> = ids
        .into_iter()
        .enumerate()
        .map(|(n, id)| subject.fact(MessageId::new(id).expect("a valid id"), n))
        .collect();
    let mut worker = inbox.open(&fixture);
    let mut outcomes = deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    outcomes += deliver_all(worker.as_mut(), handler.as_ref(), &messages);
    Play {
        scenario: format!("exact ids via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: 2 * messages.len() as u64,
        steps: Vec::new(),
        observed: observe(&fixture, subject, outcomes),
        messages,
    }
}

pub fn exact_ids<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
) -> Result<PlayOf<S>, Violation> {
    play_exact_ids(subject, inbox).judge(subject)
}
