//! Ids "cleaned up" before they are compared: each merges messages that
//! differ, and loses all but one of them.

use unicode_normalization::UnicodeNormalization;

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::message::{Message, MessageId};
use inbox_kit_runtime::storage::StorageError;

use crate::harness::{InboxUnderTest, Project, RealInbox};

/// The real inbox, given ids rewritten by `rewrite` before they are
/// recorded: how an inbox that "cleans up" ids behaves.
struct RewritesIds<P: Project> {
    inner: Box<dyn Inbox<P::Registry>>,
    rewrite: fn(&str) -> String,
}

impl<P: Project> Inbox<P::Registry> for RewritesIds<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        let messages: Vec<Message<P::Event>> = batch
            .iter()
            .map(|d| Message {
                id: MessageId::new((self.rewrite)(d.message.id.as_str()))
                    .unwrap_or_else(|_| d.message.id.clone()),
                event: d.message.event.clone(),
                trace_parent: None,
            })
            .collect();
        let rewritten: Vec<Delivery<'_, P::Registry>> = batch
            .iter()
            .zip(&messages)
            .map(|(d, message)| Delivery {
                delivered: d.delivered,
                ..Delivery::new(d.handler, message)
            })
            .collect();
        self.inner.deliver_batch(&rewritten)
    }
}

fn rewriting<P: Project>(
    fixture: &P::Fixture,
    rewrite: fn(&str) -> String,
) -> Box<dyn Inbox<P::Registry>> {
    Box::new(RewritesIds::<P> {
        inner: RealInbox::BATCHED.open(fixture),
        rewrite,
    })
}

/// Ids compared without regard to letter case (lower-cased before they are
/// recorded, as a case-insensitive column or index would). `Order-A1` and
/// `order-a1` are two messages; this inbox drops the second. Caught only by
/// exact ids.
pub struct FoldsCase;

impl<P: Project> InboxUnderTest<P> for FoldsCase {
    fn name(&self) -> String {
        "ids folded to lower case".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        rewriting::<P>(fixture, str::to_lowercase)
    }
}

/// Ids trimmed of surrounding whitespace before they are recorded. Caught
/// only by exact ids.
pub struct TrimsIds;

impl<P: Project> InboxUnderTest<P> for TrimsIds {
    fn name(&self) -> String {
        "ids trimmed".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        rewriting::<P>(fixture, |id| id.trim().to_owned())
    }
}

/// Ids put into Unicode normal form C before they are recorded: two ids
/// that merely look alike become one. Caught only by exact ids.
pub struct NormalizesIds;

impl<P: Project> InboxUnderTest<P> for NormalizesIds {
    fn name(&self) -> String {
        "ids normalized (NFC)".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        rewriting::<P>(fixture, |id| id.nfc().collect())
    }
}

/// Ids cut to 64 bytes (a column too narrow that truncates): two long ids
/// that differ near the end become one. Caught only by exact ids.
pub struct TruncatesIds;

impl<P: Project> InboxUnderTest<P> for TruncatesIds {
    fn name(&self) -> String {
        "ids truncated to 64 bytes".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        rewriting::<P>(fixture, |id| {
            let mut end = id.len().min(64);
            while !id.is_char_boundary(end) {
                end -= 1;
            }
            id[..end].to_owned()
        })
    }
}
