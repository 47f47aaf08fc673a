//! The events this service understands, one variant per message `type`.
//!
//! Decoding checks the payload completely *before* anything touches the
//! database: a payload that cannot be applied is rejected with its line
//! number instead of failing inside a transaction on every redelivery.
//! To add an event: add a variant, a payload struct, one arm in
//! [`Event::decode`] and [`Event::encode`], and an accessor like
//! [`Event::payment_captured`] for the handlers that subscribe to it.

use serde::{Deserialize, Serialize};

/// The largest amount a single payment may carry (in minor units, e.g. cents).
///
/// It keeps balance arithmetic far away from `i64` overflow, which SQLite
/// would otherwise turn into a floating-point balance.
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;

/// A decoded event.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `payment.captured`: money left an account.
    PaymentCaptured(PaymentCaptured),
}

/// Payload of `payment.captured`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentCaptured {
    /// The account that paid.
    pub account: i64,
    /// How much it paid, in minor units: 1 to [`MAX_AMOUNT`].
    pub amount: i64,
}

/// Why an event could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidEvent {
    #[error("unknown type `{0}`")]
    UnknownType(String),
    #[error("bad payload for `{kind}`: {reason}")]
    BadPayload { kind: &'static str, reason: String },
}

impl Event {
    pub const PAYMENT_CAPTURED: &'static str = "payment.captured";

    /// Decodes the payload of a message of type `kind`.
    pub fn decode(kind: &str, payload: &str) -> Result<Self, InvalidEvent> {
        match kind {
            Self::PAYMENT_CAPTURED => {
                let payment: PaymentCaptured = parse_payload(Self::PAYMENT_CAPTURED, payload)?;
                if !(1..=MAX_AMOUNT).contains(&payment.amount) {
                    return Err(InvalidEvent::BadPayload {
                        kind: Self::PAYMENT_CAPTURED,
                        reason: format!("amount must be between 1 and {MAX_AMOUNT}"),
                    });
                }
                Ok(Self::PaymentCaptured(payment))
            }
            other => Err(InvalidEvent::UnknownType(other.to_owned())),
        }
    }

    /// The message type and payload that [`Event::decode`] turns back into
    /// this event (used to keep dead letters re-drivable).
    pub fn encode(&self) -> (&'static str, String) {
        match self {
            Self::PaymentCaptured(payment) => (Self::PAYMENT_CAPTURED, to_json(payment)),
        }
    }

    /// What the event is about, for spreading messages over workers: the
    /// pipeline gives events with equal keys to the same worker, in order,
    /// so that two workers never update the same rows at the same time
    /// (on PostgreSQL, two batches locking rows in opposite orders wait
    /// for each other until one is cancelled as a deadlock).
    pub fn partition_key(&self) -> u64 {
        match self {
            Self::PaymentCaptured(payment) => payment.account.unsigned_abs(),
        }
    }

    /// The payment, if this is a `payment.captured` event.
    ///
    /// Handlers read their payload through accessors like this one rather
    /// than matching on every variant, so adding an event touches this file
    /// and its own handler only.
    pub fn payment_captured(&self) -> Option<&PaymentCaptured> {
        match self {
            Self::PaymentCaptured(payment) => Some(payment),
            #[allow(unreachable_patterns, reason = "for the events added later")]
            _ => None,
        }
    }
}

/// A handler was given an event it does not subscribe to (a bug in the
/// routing, never the message's fault).
#[derive(Debug, thiserror::Error)]
#[error("this consumer does not subscribe to `{0}`")]
pub struct NotSubscribed(pub &'static str);

impl From<&Event> for NotSubscribed {
    fn from(event: &Event) -> Self {
        Self(event.encode().0)
    }
}

fn parse_payload<T: for<'de> Deserialize<'de>>(
    kind: &'static str,
    payload: &str,
) -> Result<T, InvalidEvent> {
    serde_json::from_str(payload).map_err(|error| InvalidEvent::BadPayload {
        kind,
        reason: error.to_string(),
    })
}

fn to_json(payload: &impl Serialize) -> String {
    serde_json::to_string(payload).expect("payload structs always serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_payment() {
        let event = Event::decode("payment.captured", r#"{"account":1,"amount":10}"#).unwrap();
        assert_eq!(
            event,
            Event::PaymentCaptured(PaymentCaptured {
                account: 1,
                amount: 10
            })
        );
    }

    #[test]
    fn encode_is_the_inverse_of_decode() {
        let event = Event::decode("payment.captured", r#"{"account":7,"amount":99}"#).unwrap();
        let (kind, payload) = event.encode();
        assert_eq!(Event::decode(kind, &payload).unwrap(), event);
    }

    #[test]
    fn refuses_amounts_outside_the_range() {
        for amount in [0, -5, MAX_AMOUNT + 1] {
            let payload = serde_json::json!({ "account": 1, "amount": amount }).to_string();
            assert!(matches!(
                Event::decode("payment.captured", &payload),
                Err(InvalidEvent::BadPayload { .. })
            ));
        }
    }

    #[test]
    fn refuses_an_unknown_type() {
        assert_eq!(
            Event::decode("payment.refunded", "{}"),
            Err(InvalidEvent::UnknownType("payment.refunded".into()))
        );
    }
}
