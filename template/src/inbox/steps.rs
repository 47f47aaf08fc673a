//! How a batch's deliveries tell the runtime's batching
//! (`inbox_kit_runtime::steps`) which of them may go through a handler's
//! set-based path together: their message id, delivery count, and handler.

pub use inbox_kit_runtime::steps::{Step, steps};

use super::Delivery;
use crate::handlers::BorrowedHandler;

impl inbox_kit_runtime::steps::Batched for Delivery<'_> {
    fn message_id(&self) -> &str {
        self.message.id.as_str()
    }

    fn delivered(&self) -> u32 {
        self.delivered
    }

    fn has_set_based(&self) -> bool {
        self.handler.set_based().is_some()
    }

    fn same_handler(&self, other: &Self) -> bool {
        same_handler(self.handler, other.handler)
    }
}

/// Whether `a` and `b` are one handler: the same object seen through the
/// same vtable. The vtable is compared on purpose: two handlers of no size
/// (`Debit`, a test's wrapper of no size) may sit at one address, and only
/// the vtable tells their types apart. (Equal vtables of two types would
/// mean identical code, hence identical behaviour.)
#[allow(ambiguous_wide_pointer_comparisons)]
fn same_handler(a: &BorrowedHandler<'_>, b: &BorrowedHandler<'_>) -> bool {
    std::ptr::eq(a, b)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::event::{Event, PaymentCaptured};
    use crate::handlers::{Debit, Refund};
    use crate::inbox::Policy;
    use crate::message::{Message, MessageId};

    fn message(id: &str) -> Message {
        Message {
            id: MessageId::new(id).expect("a valid id"),
            event: Event::PaymentCaptured(PaymentCaptured {
                account: 1,
                amount: 10,
            }),
            trace_parent: None,
        }
    }

    const POLICY: Policy = Policy { max_attempts: 3 };

    /// One handler object is one handler; two objects of one type (here of
    /// no size) are two, and a type without a set-based path goes alone.
    #[test]
    fn deliveries_share_a_run_only_through_one_handler_object() {
        let (a, b, c) = (message("a"), message("b"), message("c"));
        let (one, other) = (Arc::new(Debit), Arc::new(Debit));
        let batch = [
            Delivery::new(one.as_ref(), &a),
            Delivery::new(one.as_ref(), &b),
            Delivery::new(other.as_ref(), &c),
            Delivery::new(&Refund, &a),
        ];
        assert_eq!(
            steps(&batch, POLICY),
            [Step::Together(0..2), Step::Together(2..3), Step::Alone(3)]
        );
    }
}
