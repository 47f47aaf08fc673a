//! What a consumer receives: an id fixed by the sender and a typed event.
//!
//! The id is the whole basis of duplicate detection. It must be chosen once by
//! the sender (or the broker) and reused on every resend. That is why this
//! module only ever *validates* ids and never creates them: an id minted on
//! receipt, or derived from a hash of the payload, makes every redelivery
//! look new (or two different messages look the same).

/// The longest message id accepted, in bytes.
///
/// Broker ids (UUIDs, JetStream sequence-derived ids, SQS message ids) are far
/// shorter; the limit keeps the inbox index small and turns a garbage id into
/// a clear rejection instead of a silently stored blob.
pub const MAX_MESSAGE_ID_BYTES: usize = 200;

/// A validated message id: 1 to [`MAX_MESSAGE_ID_BYTES`] bytes, no control
/// characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

/// Why a message id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidMessageId {
    #[error("message id is empty")]
    Empty,
    #[error("message id is {len} bytes long; the limit is {MAX_MESSAGE_ID_BYTES}")]
    TooLong { len: usize },
    #[error("message id contains a control character")]
    ControlCharacter,
}

impl MessageId {
    /// Validates an id that came with a message.
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidMessageId> {
        let id = id.into();
        if id.is_empty() {
            return Err(InvalidMessageId::Empty);
        }
        if id.len() > MAX_MESSAGE_ID_BYTES {
            return Err(InvalidMessageId::TooLong { len: id.len() });
        }
        if id.chars().any(char::is_control) {
            return Err(InvalidMessageId::ControlCharacter);
        }
        Ok(Self(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One message as the consumers see it: an id and an event of the
/// project's own type `E`.
#[derive(Clone, Debug, PartialEq)]
pub struct Message<E> {
    pub id: MessageId,
    pub event: E,
    /// The W3C trace context the message came with (its producer's span),
    /// or, once a worker took it, that of the worker's `receive` span: what
    /// the notifications it causes carry on (see the project's `trace`). Never
    /// part of what a consumer decides by.
    pub trace_parent: Option<String>,
}

/// The header (and the JSON field) that carries a message's W3C trace
/// context ([`Message::trace_parent`]) between processes.
pub const TRACEPARENT: &str = "traceparent";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_an_ordinary_id() {
        assert_eq!(MessageId::new("evt-0001").unwrap().as_str(), "evt-0001");
    }

    #[test]
    fn refuses_empty_long_and_control_ids() {
        assert_eq!(MessageId::new(""), Err(InvalidMessageId::Empty));
        let long = "x".repeat(MAX_MESSAGE_ID_BYTES + 1);
        assert_eq!(
            MessageId::new(long),
            Err(InvalidMessageId::TooLong {
                len: MAX_MESSAGE_ID_BYTES + 1
            })
        );
        assert_eq!(
            MessageId::new("a\nb"),
            Err(InvalidMessageId::ControlCharacter)
        );
    }

    #[test]
    fn the_limit_itself_is_allowed() {
        assert!(MessageId::new("x".repeat(MAX_MESSAGE_ID_BYTES)).is_ok());
    }

    #[test]
    fn an_id_reads_as_itself() {
        assert_eq!(MessageId::new("evt-7").unwrap().to_string(), "evt-7");
    }
}
