//! The events this service understands, one variant per message `type`.
//!
//! Decoding checks the payload completely *before* anything touches the
//! database: a payload that cannot be applied is rejected with its line
//! number instead of failing inside a transaction on every redelivery.
//! To add an event: add a variant, a payload struct, one arm in
//! [`Event::decode`] and [`Event::encode`], and an accessor like
//! [`Event::payment_captured`] for the handlers that subscribe to it.

use serde::{Deserialize, Serialize};

use inbox_kit_runtime::envelope::{InvalidEvent, Wire, decode_payload, encode_payload};

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
    /// `payment.refunded`: some of a captured payment goes back.
    PaymentRefunded(PaymentRefunded),
}

/// Payload of `payment.captured`. The account must be open first:
/// `cargo run -- open-account ID BALANCE`, or
/// `echo "INSERT INTO accounts (id, balance) VALUES (3, 250);" | cargo run -- seed -`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentCaptured {
    /// The account that paid.
    pub account: i64,
    /// How much it paid, in minor units: 1 to [`MAX_AMOUNT`].
    pub amount: i64,
}

/// Payload of `payment.refunded`: the refunds of one payment never add up
/// to more than it debited, and a refund of a payment never captured is
/// refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentRefunded {
    /// The refund's own id, fixed by whoever issued it: one refund is
    /// credited once, whatever message carries it.
    pub refund_id: String,
    /// The captured payment it refunds (that payment's message id).
    pub payment_id: String,
    /// The account the payment came from, and the refund goes back to.
    pub account: i64,
    /// How much goes back, in minor units: 1 to [`MAX_AMOUNT`].
    pub amount: i64,
}

/// The longest refund or payment id a refund may name, in bytes: the
/// same as a message id's limit (`message.rs` tests that they agree; an
/// event knows nothing of the message that carries it).
pub const MAX_BUSINESS_ID_BYTES: usize = 200;

impl Event {
    pub const PAYMENT_CAPTURED: &'static str = "payment.captured";
    pub const PAYMENT_REFUNDED: &'static str = "payment.refunded";

    /// What the event is about, for spreading messages over workers: the
    /// pipeline gives events with equal keys to the same worker, in order,
    /// so that two workers never update the same rows at the same time
    /// (on PostgreSQL, two batches locking rows in opposite orders wait
    /// for each other until one is cancelled as a deadlock). A refund is
    /// about its account, like the payment it refunds: so it follows that
    /// payment on the same worker, and the refunds of one payment are
    /// applied in the order they were sent.
    pub fn partition_key(&self) -> u64 {
        match self {
            Self::PaymentCaptured(payment) => payment.account.unsigned_abs(),
            Self::PaymentRefunded(refund) => refund.account.unsigned_abs(),
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
            _ => None,
        }
    }

    /// The refund, if this is a `payment.refunded` event.
    pub fn payment_refunded(&self) -> Option<&PaymentRefunded> {
        match self {
            Self::PaymentRefunded(refund) => Some(refund),
            _ => None,
        }
    }
}

impl Wire for Event {
    /// Decodes the payload of a message of type `kind`.
    fn decode(kind: &str, payload: &str) -> Result<Self, InvalidEvent> {
        match kind {
            Self::PAYMENT_CAPTURED => {
                let payment: PaymentCaptured = decode_payload(Self::PAYMENT_CAPTURED, payload)?;
                if !(1..=MAX_AMOUNT).contains(&payment.amount) {
                    return Err(InvalidEvent::BadPayload {
                        kind: Self::PAYMENT_CAPTURED,
                        reason: format!("amount must be between 1 and {MAX_AMOUNT}"),
                    });
                }
                Ok(Self::PaymentCaptured(payment))
            }
            Self::PAYMENT_REFUNDED => {
                let refund: PaymentRefunded = decode_payload(Self::PAYMENT_REFUNDED, payload)?;
                let bad = |reason: String| InvalidEvent::BadPayload {
                    kind: Self::PAYMENT_REFUNDED,
                    reason,
                };
                for (field, id) in [
                    ("refund_id", &refund.refund_id),
                    ("payment_id", &refund.payment_id),
                ] {
                    if id.is_empty()
                        || id.len() > MAX_BUSINESS_ID_BYTES
                        || id.chars().any(char::is_control)
                    {
                        return Err(bad(format!(
                            "{field} must be 1 to {MAX_BUSINESS_ID_BYTES} bytes without control characters"
                        )));
                    }
                }
                if !(1..=MAX_AMOUNT).contains(&refund.amount) {
                    return Err(bad(format!("amount must be between 1 and {MAX_AMOUNT}")));
                }
                Ok(Self::PaymentRefunded(refund))
            }
            other => Err(InvalidEvent::UnknownType(other.to_owned())),
        }
    }

    /// The message type and payload that [`Event::decode`] turns back into
    /// this event (used to keep dead letters re-drivable).
    fn encode(&self) -> (&'static str, String) {
        match self {
            Self::PaymentCaptured(payment) => (Self::PAYMENT_CAPTURED, encode_payload(payment)),
            Self::PaymentRefunded(refund) => (Self::PAYMENT_REFUNDED, encode_payload(refund)),
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
    fn decodes_a_refund() {
        let payload = r#"{"refund_id":"rf-1","payment_id":"pay-1","account":1,"amount":5}"#;
        let event = Event::decode("payment.refunded", payload).unwrap();
        assert_eq!(event.payment_refunded().unwrap().refund_id, "rf-1");
        let (kind, payload) = event.encode();
        assert_eq!(Event::decode(kind, &payload).unwrap(), event);
    }

    #[test]
    fn refuses_a_refund_without_its_ids_or_amount() {
        for payload in [
            r#"{"refund_id":"","payment_id":"pay-1","account":1,"amount":5}"#,
            r#"{"refund_id":"rf-1","payment_id":"pay\u0000","account":1,"amount":5}"#,
            r#"{"refund_id":"rf-1","payment_id":"pay-1","account":1,"amount":0}"#,
            r#"{"payment_id":"pay-1","account":1,"amount":5}"#,
        ] {
            assert!(
                matches!(
                    Event::decode("payment.refunded", payload),
                    Err(InvalidEvent::BadPayload { .. })
                ),
                "{payload}"
            );
        }
    }

    #[test]
    fn refuses_an_unknown_type() {
        assert_eq!(
            Event::decode("invoice.issued", "{}"),
            Err(InvalidEvent::UnknownType("invoice.issued".into()))
        );
    }
}
