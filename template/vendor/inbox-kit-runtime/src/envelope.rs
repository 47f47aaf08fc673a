//! The wire format of every source: one JSON object per message.
//!
//! ```text
//! {"id": "pay-0001", "type": "payment.captured", "payload": {"account": 1, "amount": 10}}
//! ```
//!
//! * `id`: a string fixed by the sender and reused on every resend (see
//!   [`crate::message`]); 1 to 200 bytes, no control characters.
//! * `type`: which of the project's events the payload is.
//! * `payload`: the event's fields, checked by the project's
//!   [`Wire::decode`]; this module does not depend on which events exist.
//! * `traceparent` (optional): the producer's W3C trace context, which the
//!   consumer's spans and notifications continue (see [`crate::trace`]).
//!
//! Other top-level fields are ignored, so a sender may add headers without
//! breaking a consumer. Every way a line can be unusable has its own
//! [`Rejection`], so the rejects report says exactly what to fix. The
//! envelope is the same for a file of lines and for every broker, so it is
//! parsed here once, whatever the source.

use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::message::{InvalidMessageId, Message, MessageId};

/// What the envelope needs of a project's events: each is one message
/// `type` with a JSON payload, and goes back to the same pair.
pub trait Wire: Sized {
    /// Decodes, and checks completely, the payload of a message of type
    /// `kind`: a payload that cannot be applied is refused here, before
    /// anything touches the database.
    fn decode(kind: &str, payload: &str) -> Result<Self, InvalidEvent>;

    /// The message type and payload that [`Wire::decode`] turns back into
    /// this event (used to keep dead letters re-drivable).
    fn encode(&self) -> (&'static str, String);
}

/// Why an event could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidEvent {
    #[error("unknown type `{0}`")]
    UnknownType(String),
    #[error("bad payload for `{kind}`: {reason}")]
    BadPayload { kind: &'static str, reason: String },
}

/// Why a line was not accepted as a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("line is not valid UTF-8")]
    NotUtf8,
    #[error("line is longer than {limit} bytes")]
    TooLong { limit: usize },
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    #[error("not a valid envelope: {0}")]
    BadEnvelope(String),
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    #[error("field `{0}` must be a string")]
    NotAString(&'static str),
    #[error(transparent)]
    InvalidId(#[from] InvalidMessageId),
    #[error(transparent)]
    InvalidEvent(#[from] InvalidEvent),
}

#[derive(Deserialize)]
#[serde(expecting = "a JSON object")]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    #[serde(borrow)]
    traceparent: Option<&'a RawValue>,
}

/// Parses one line (without its line break) into a [`Message`].
pub fn parse_line<E: Wire>(line: &[u8]) -> Result<Message<E>, Rejection> {
    let text = std::str::from_utf8(line).map_err(|_| Rejection::NotUtf8)?;
    let envelope: Envelope<'_> = serde_json::from_str(text).map_err(|error| {
        if error.is_data() {
            Rejection::BadEnvelope(error.to_string())
        } else {
            Rejection::InvalidJson(error.to_string())
        }
    })?;
    let id = string_field("id", envelope.id)?;
    let kind = string_field("type", envelope.kind)?;
    let payload = envelope.payload.ok_or(Rejection::MissingField("payload"))?;
    let id = MessageId::new(id)?;
    let event = E::decode(&kind, payload.get())?;
    // A trace context that is not a string is no reason to refuse a
    // message: it only starts a trace of its own.
    let trace_parent = envelope
        .traceparent
        .and_then(|raw| serde_json::from_str(raw.get()).ok());
    Ok(Message {
        id,
        event,
        trace_parent,
    })
}

/// `message` as one line of this format (without the line break): what
/// [`parse_line`] reads back into the same message.
pub fn to_line<E: Wire>(message: &Message<E>) -> String {
    let (kind, payload) = message.event.encode();
    let payload = RawValue::from_string(payload).expect("an encoded payload is JSON");
    let mut line =
        serde_json::json!({ "id": message.id.as_str(), "type": kind, "payload": payload });
    if let Some(traceparent) = &message.trace_parent {
        line["traceparent"] = traceparent.as_str().into();
    }
    line.to_string()
}

/// A payload of type `kind` read into its struct: the first half of a
/// [`Wire::decode`] arm, before the checks of the event's own limits.
pub fn decode_payload<T: DeserializeOwned>(
    kind: &'static str,
    payload: &str,
) -> Result<T, InvalidEvent> {
    serde_json::from_str(payload).map_err(|error| InvalidEvent::BadPayload {
        kind,
        reason: error.to_string(),
    })
}

/// A payload struct as JSON: a [`Wire::encode`] arm.
pub fn encode_payload(payload: &impl Serialize) -> String {
    serde_json::to_string(payload).expect("payload structs always serialize")
}

fn string_field<'a>(
    name: &'static str,
    raw: Option<&'a RawValue>,
) -> Result<Cow<'a, str>, Rejection> {
    let raw = raw.ok_or(Rejection::MissingField(name))?;
    serde_json::from_str(raw.get()).map_err(|_| Rejection::NotAString(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a project's events: one type, one checked field.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Captured {
        amount: i64,
    }

    impl Wire for Captured {
        fn decode(kind: &str, payload: &str) -> Result<Self, InvalidEvent> {
            match kind {
                "captured" => {
                    let captured: Captured = decode_payload("captured", payload)?;
                    if captured.amount < 1 {
                        return Err(InvalidEvent::BadPayload {
                            kind: "captured",
                            reason: "amount must be positive".into(),
                        });
                    }
                    Ok(captured)
                }
                other => Err(InvalidEvent::UnknownType(other.to_owned())),
            }
        }

        fn encode(&self) -> (&'static str, String) {
            ("captured", encode_payload(self))
        }
    }

    fn parse(line: &str) -> Result<Message<Captured>, Rejection> {
        parse_line(line.as_bytes())
    }

    #[test]
    fn parses_the_documented_envelope_and_ignores_other_fields() {
        let message = parse(
            r#"{"id":"pay-1","type":"captured","payload":{"amount":10},"traceparent":"00-ab","extra":1}"#,
        )
        .unwrap();
        assert_eq!(message.id.as_str(), "pay-1");
        assert_eq!(message.event, Captured { amount: 10 });
        assert_eq!(message.trace_parent.as_deref(), Some("00-ab"));
    }

    #[test]
    fn a_trace_context_that_is_not_a_string_is_dropped_not_refused() {
        let message =
            parse(r#"{"id":"a","type":"captured","payload":{"amount":1},"traceparent":7}"#)
                .unwrap();
        assert_eq!(message.trace_parent, None);
    }

    #[test]
    fn unescapes_string_ids() {
        let message =
            parse(r#"{"id":"a\u0062c","type":"captured","payload":{"amount":1}}"#).unwrap();
        assert_eq!(message.id.as_str(), "abc");
    }

    #[test]
    fn names_each_problem() {
        let cases = [
            ("not json", "invalid JSON: expected ident"),
            (r#"{"id":"a""#, "invalid JSON: EOF while parsing"),
            (
                "42",
                "not a valid envelope: invalid type: integer `42`, expected a JSON object",
            ),
            (
                r#"{"id":"a","id":"b"}"#,
                "not a valid envelope: duplicate field `id`",
            ),
            (r#"{"type":"captured","payload":{}}"#, "missing field `id`"),
            (
                r#"{"id":null,"type":"captured","payload":{}}"#,
                "missing field `id`",
            ),
            (
                r#"{"id":7,"type":"captured","payload":{}}"#,
                "field `id` must be a string",
            ),
            (
                r#"{"id":"","type":"captured","payload":{}}"#,
                "message id is empty",
            ),
            (r#"{"id":"a","payload":{}}"#, "missing field `type`"),
            (
                r#"{"id":"a","type":5,"payload":{}}"#,
                "field `type` must be a string",
            ),
            (
                r#"{"id":"a","type":"nope","payload":{}}"#,
                "unknown type `nope`",
            ),
            (r#"{"id":"a","type":"captured"}"#, "missing field `payload`"),
            (
                r#"{"id":"a","type":"captured","payload":{"amount":"1"}}"#,
                "bad payload for `captured`: invalid type",
            ),
            (
                r#"{"id":"a","type":"captured","payload":{"amount":0}}"#,
                "bad payload for `captured`: amount must be positive",
            ),
        ];
        for (line, expected) in cases {
            let reason = parse(line).unwrap_err().to_string();
            assert!(
                reason.starts_with(expected),
                "{line}: got {reason:?}, expected it to start with {expected:?}"
            );
        }
    }

    #[test]
    fn to_line_is_read_back_as_the_same_message() {
        for line in [
            r#"{"id":"p 1\u00e9","type":"captured","payload":{"amount":99}}"#,
            r#"{"id":"p","type":"captured","payload":{"amount":1},"traceparent":"00-cd"}"#,
        ] {
            let message = parse(line).unwrap();
            assert_eq!(parse(&to_line(&message)).unwrap(), message);
        }
    }

    #[test]
    fn refuses_bytes_that_are_not_utf8() {
        assert_eq!(
            parse_line::<Captured>(b"{\"id\":\"\xff\"}"),
            Err(Rejection::NotUtf8)
        );
    }
}
