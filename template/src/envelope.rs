//! The wire format of `run`'s input: one JSON object per line.
//!
//! ```text
//! {"id": "pay-0001", "type": "payment.captured", "payload": {"account": 1, "amount": 10}}
//! ```
//!
//! * `id`: a string fixed by the sender and reused on every resend (see
//!   [`crate::message`]); 1 to 200 bytes, no control characters.
//! * `type`: which [`Event`] the payload is.
//! * `payload`: the event's fields. Each event type and its fields are
//!   listed once, in the README's `Input` section, and checked by
//!   [`Event::decode`]; this module does not depend on which events exist.
//! * `traceparent` (optional): the producer's W3C trace context, which
//!   this consumer's spans and notifications continue (see `crate::trace`).
//!
//! Other top-level fields are ignored, so a sender may add headers without
//! breaking this consumer. Every way a line can be unusable has its own
//! [`Rejection`], so the rejects report says exactly what to fix.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::event::{Event, InvalidEvent};
use crate::message::{InvalidMessageId, Message, MessageId};

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
struct Wire<'a> {
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
pub fn parse_line(line: &[u8]) -> Result<Message, Rejection> {
    let text = std::str::from_utf8(line).map_err(|_| Rejection::NotUtf8)?;
    let wire: Wire<'_> = serde_json::from_str(text).map_err(|error| {
        if error.is_data() {
            Rejection::BadEnvelope(error.to_string())
        } else {
            Rejection::InvalidJson(error.to_string())
        }
    })?;
    let id = string_field("id", wire.id)?;
    let kind = string_field("type", wire.kind)?;
    let payload = wire.payload.ok_or(Rejection::MissingField("payload"))?;
    let id = MessageId::new(id)?;
    let event = Event::decode(&kind, payload.get())?;
    // A trace context that is not a string is no reason to refuse a
    // message: it only starts a trace of its own.
    let trace_parent = wire
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
pub fn to_line(message: &Message) -> String {
    let (kind, payload) = message.event.encode();
    let payload = RawValue::from_string(payload).expect("an encoded payload is JSON");
    let mut line =
        serde_json::json!({ "id": message.id.as_str(), "type": kind, "payload": payload });
    if let Some(traceparent) = &message.trace_parent {
        line["traceparent"] = traceparent.as_str().into();
    }
    line.to_string()
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
    use crate::event::PaymentCaptured;

    fn parse(line: &str) -> Result<Message, Rejection> {
        parse_line(line.as_bytes())
    }

    #[test]
    fn parses_the_documented_envelope() {
        let message = parse(
            r#"{"id":"pay-1","type":"payment.captured","payload":{"account":1,"amount":10},"trace":"x"}"#,
        )
        .unwrap();
        assert_eq!(message.id.as_str(), "pay-1");
        assert_eq!(
            message.event,
            Event::PaymentCaptured(PaymentCaptured {
                account: 1,
                amount: 10
            })
        );
    }

    #[test]
    fn unescapes_string_ids() {
        let message = parse(
            r#"{"id":"a\u0062c","type":"payment.captured","payload":{"account":1,"amount":1}}"#,
        )
        .unwrap();
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
            (
                r#"{"type":"payment.captured","payload":{}}"#,
                "missing field `id`",
            ),
            (
                r#"{"id":null,"type":"payment.captured","payload":{}}"#,
                "missing field `id`",
            ),
            (
                r#"{"id":7,"type":"payment.captured","payload":{}}"#,
                "field `id` must be a string",
            ),
            (
                r#"{"id":"","type":"payment.captured","payload":{}}"#,
                "message id is empty",
            ),
            (r#"{"id":"a","payload":{}}"#, "missing field `type`"),
            (
                r#"{"id":"a","type":"nope","payload":{}}"#,
                "unknown type `nope`",
            ),
            (
                r#"{"id":"a","type":"payment.captured"}"#,
                "missing field `payload`",
            ),
            (
                r#"{"id":"a","type":"payment.captured","payload":{"account":"1","amount":1}}"#,
                "bad payload for `payment.captured`",
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
        let message = parse(
            r#"{"id":"p 1\u00e9","type":"payment.captured","payload":{"account":7,"amount":99}}"#,
        )
        .unwrap();
        assert_eq!(parse(&to_line(&message)).unwrap(), message);
    }

    #[test]
    fn refuses_bytes_that_are_not_utf8() {
        assert_eq!(parse_line(b"{\"id\":\"\xff\"}"), Err(Rejection::NotUtf8));
    }
}
