//! The seam between a consumer and its database: one delivery (a message
//! for one handler), what applies deliveries idempotently ([`Inbox`]), and
//! what keeps the failures and dead letters beside it ([`DeadLetters`]).
//!
//! Each database implements these traits with its transactional inbox:
//! in ONE transaction, insert `(consumer, message_id)` under a unique key
//! (finding it there is the duplicate check), run the handler's update,
//! commit; a failed update rolls the inbox row back with it, so the
//! redelivery applies the message once. The test kit plugs known-broken
//! implementations into the same seam to show that the tests catch them.
//!
//! Everything here is generic over the project's [`Registry`]: its events
//! and the object its handlers are held as.

use crate::handler::Registry;
use crate::inbox::{DeadLetter, Outcome};
use crate::message::Message;
use crate::steps::Batched;
use crate::storage::StorageError;

/// One message for one consumer.
pub struct Delivery<'a, R: Registry> {
    pub handler: &'a R::Handler<'a>,
    pub message: &'a Message<R::Event>,
    /// How many times the source has delivered the message, this time
    /// included (1 when the source does not count).
    pub delivered: u32,
}

impl<'a, R: Registry> Delivery<'a, R> {
    /// A first delivery of `message` to `handler`.
    pub fn new(handler: &'a R::Handler<'a>, message: &'a Message<R::Event>) -> Self {
        Self {
            handler,
            message,
            delivered: 1,
        }
    }
}

// Written out: a derive would ask `R` itself to be `Clone`.
impl<R: Registry> Clone for Delivery<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: Registry> Copy for Delivery<'_, R> {}

impl<R: Registry> Batched for Delivery<'_, R> {
    fn message_id(&self) -> &str {
        self.message.id.as_str()
    }

    fn delivered(&self) -> u32 {
        self.delivered
    }

    fn has_set_based(&self) -> bool {
        R::has_set_based(self.handler)
    }

    /// The same object seen through the same vtable. The vtable is
    /// compared on purpose: two handlers of no size (`Debit`, a test's
    /// wrapper of no size) may sit at one address, and only the vtable
    /// tells their types apart. (Equal vtables of two types would mean
    /// identical code, hence identical behaviour.)
    #[allow(ambiguous_wide_pointer_comparisons)]
    fn same_handler(&self, other: &Self) -> bool {
        std::ptr::eq(self.handler, other.handler)
    }
}

/// Something that applies deliveries idempotently (one connection's worth).
pub trait Inbox<R: Registry>: Send {
    /// Processes a batch of deliveries in one transaction and returns one
    /// outcome per delivery, in order. Outcomes count (and may be
    /// acknowledged) only when this returns `Ok`: an error means the whole
    /// batch was rolled back, or may have been, and nothing of it counts.
    fn deliver_batch(&mut self, batch: &[Delivery<'_, R>]) -> Result<Vec<Outcome>, StorageError>;

    /// Processes a single delivery in its own transaction.
    fn deliver<'a>(
        &mut self,
        handler: &'a R::Handler<'a>,
        message: &'a Message<R::Event>,
    ) -> Result<Outcome, StorageError> {
        let outcomes = self.deliver_batch(&[Delivery::new(handler, message)])?;
        Ok(outcomes
            .into_iter()
            .next()
            .expect("one outcome per delivery"))
    }
}

/// Failure counts and dead letters, kept next to the inbox.
pub trait DeadLetters<R: Registry> {
    /// Every dead letter, oldest first.
    fn dead_letters(&mut self) -> Result<Vec<DeadLetter>, StorageError>;

    /// Failures counted so far for one delivery (0 if none).
    fn failures(&mut self, consumer: &str, message_id: &str) -> Result<u32, StorageError>;

    /// Gives a dead letter another chance, in one transaction: forget its
    /// inbox row and attempt count, deliver it again, and delete the dead
    /// letter only if it applied. If it fails or is refused again,
    /// everything is rolled back and the dead letter stays as it was.
    fn redrive<'a>(
        &mut self,
        handler: &'a R::Handler<'a>,
        message: &'a Message<R::Event>,
    ) -> Result<Outcome, StorageError>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::handler::{Handler, HandlerError, SetBased, Subscriber};
    use crate::inbox::Policy;
    use crate::message::MessageId;
    use crate::steps::{Step, steps};

    /// A consumer with a set-based path, and one without.
    struct Tally;
    struct Plain;

    impl Subscriber<i64> for Tally {
        fn consumer(&self) -> &'static str {
            "tally"
        }
        fn subscribes_to(&self, _: &i64) -> bool {
            true
        }
    }

    impl Subscriber<i64> for Plain {
        fn consumer(&self) -> &'static str {
            "plain"
        }
        fn subscribes_to(&self, _: &i64) -> bool {
            true
        }
    }

    impl Handler<i64, i64> for Tally {
        fn apply(&self, total: &mut i64, message: &Message<i64>) -> Result<(), HandlerError> {
            *total += message.event;
            Ok(())
        }
        fn set_based(&self) -> Option<&dyn SetBased<i64, i64>> {
            Some(self)
        }
    }

    impl SetBased<i64, i64> for Tally {
        fn apply_all(
            &self,
            total: &mut i64,
            messages: &[&Message<i64>],
        ) -> Result<(), HandlerError> {
            *total += messages.iter().map(|message| message.event).sum::<i64>();
            Ok(())
        }
    }

    impl Handler<i64, i64> for Plain {
        fn apply(&self, _: &mut i64, _: &Message<i64>) -> Result<(), HandlerError> {
            Ok(())
        }
    }

    /// A project whose handlers apply to a plain total.
    struct Totals;

    impl Registry for Totals {
        type Event = i64;
        type Handler<'a> = dyn Handler<i64, i64> + 'a;
        fn has_set_based(handler: &Self::Handler<'_>) -> bool {
            handler.set_based().is_some()
        }
        fn encode(event: &i64) -> (&'static str, String) {
            ("Total", event.to_string())
        }
        fn partition_key(_: &i64) -> u64 {
            0
        }
        fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a> {
            handler
        }
    }

    /// What a project names its deliveries.
    type TotalsDelivery<'a> = Delivery<'a, Totals>;

    fn message(id: &str) -> Message<i64> {
        Message {
            id: MessageId::new(id).expect("a valid id"),
            event: 1,
            trace_parent: None,
        }
    }

    /// One handler object is one handler; two objects of one type (here of
    /// no size) are two, and a handler without a set-based path goes alone.
    #[test]
    fn deliveries_share_a_run_only_through_one_handler_object() {
        let (a, b, c) = (message("a"), message("b"), message("c"));
        let one: Arc<dyn Handler<i64, i64>> = Arc::new(Tally);
        let other: Arc<dyn Handler<i64, i64>> = Arc::new(Tally);
        let batch = [
            TotalsDelivery::new(one.as_ref(), &a),
            TotalsDelivery::new(one.as_ref(), &b),
            TotalsDelivery::new(other.as_ref(), &c),
            TotalsDelivery::new(&Plain, &a),
        ];
        assert_eq!(
            steps(&batch, Policy { max_attempts: 3 }),
            [Step::Together(0..2), Step::Together(2..3), Step::Alone(3)]
        );
    }

    /// An inbox that applies every delivery to a total, for the default
    /// `deliver`: one delivery, its outcome.
    struct Applies(i64);

    impl Inbox<Totals> for Applies {
        fn deliver_batch(
            &mut self,
            batch: &[Delivery<'_, Totals>],
        ) -> Result<Vec<Outcome>, StorageError> {
            let mut outcomes = Vec::new();
            for delivery in batch {
                match delivery.handler.apply(&mut self.0, delivery.message) {
                    Ok(()) => outcomes.push(Outcome::Applied),
                    Err(error) => outcomes.push(Outcome::Failed(error.to_string())),
                }
            }
            Ok(outcomes)
        }
    }

    #[test]
    fn deliver_is_a_batch_of_one() {
        let mut inbox = Applies(0);
        let outcome = inbox.deliver(&Tally, &message("a")).unwrap();
        assert_eq!((outcome, inbox.0), (Outcome::Applied, 1));
    }
}
