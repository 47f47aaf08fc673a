//! Which deliveries of a batch a handler's set-based path takes together.
//!
//! Only what could not tell the difference: a run of consecutive deliveries
//! to one handler (the same one, not only one of the same name) that has a
//! set-based path, each of a different message,
//! none of them one the source has given up on (those are parked, not
//! applied). The batch's order is never changed, so a consumer's rules
//! across messages see them in the order the source gave them; a repeat
//! of a message inside a run starts the next run, so that it is judged
//! after the first copy's outcome (a duplicate if that applied, applied if
//! that failed and gave its claim back). Everything else goes alone.

use std::collections::HashSet;
use std::ops::Range;

use super::{Delivery, Policy};
use crate::handler::Handler;

/// One step of a batch, in the batch's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// These deliveries (positions in the batch), through the set-based
    /// path of their common handler.
    Together(Range<usize>),
    /// This delivery, one at a time.
    Alone(usize),
}

/// The steps that apply `batch`.
pub fn steps(batch: &[Delivery<'_>], policy: Policy) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut run: Option<(Range<usize>, HashSet<&str>)> = None;
    for (at, delivery) in batch.iter().enumerate() {
        let id = delivery.message.id.as_str();
        let joins = run.as_mut().is_some_and(|(range, ids)| {
            same_handler(batch[range.start].handler, delivery.handler)
                && !ids.contains(id)
                && !policy.gave_up_on(delivery.delivered)
        });
        if joins {
            let (range, ids) = run.as_mut().expect("joins a run");
            range.end = at + 1;
            ids.insert(id);
            continue;
        }
        if let Some((range, _)) = run.take() {
            steps.push(Step::Together(range));
        }
        if delivery.handler.set_based().is_some() && !policy.gave_up_on(delivery.delivered) {
            run = Some((at..at + 1, HashSet::from([id])));
        } else {
            steps.push(Step::Alone(at));
        }
    }
    if let Some((range, _)) = run {
        steps.push(Step::Together(range));
    }
    steps
}

/// Whether `a` and `b` are one handler: the same object seen through the
/// same vtable. The vtable is compared on purpose: two handlers of no size
/// (`Debit`, a test's wrapper of no size) may sit at one address, and only
/// the vtable tells their types apart. (Equal vtables of two types would
/// mean identical code, hence identical behaviour.)
#[allow(ambiguous_wide_pointer_comparisons)]
fn same_handler(a: &dyn Handler, b: &dyn Handler) -> bool {
    std::ptr::eq(a, b)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::event::{Event, PaymentCaptured};
    use crate::handlers::{Debit, Refund};
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

    #[test]
    fn consecutive_new_messages_of_one_set_based_handler_go_together() {
        let (a, b, c) = (message("a"), message("b"), message("c"));
        let batch = [
            Delivery::new(&Debit, &a),
            Delivery::new(&Debit, &b),
            Delivery::new(&Refund, &b),
            Delivery::new(&Debit, &c),
        ];
        assert_eq!(
            steps(&batch, POLICY),
            [Step::Together(0..2), Step::Alone(2), Step::Together(3..4)],
            "refund has no set-based path, and the order is kept"
        );
    }

    #[test]
    fn a_repeat_or_a_given_up_delivery_ends_the_run() {
        let (a, b) = (message("a"), message("b"));
        let given_up = Delivery {
            delivered: POLICY.max_attempts + 1,
            ..Delivery::new(&Debit, &b)
        };
        let batch = [
            Delivery::new(&Debit, &a),
            Delivery::new(&Debit, &b),
            Delivery::new(&Debit, &a),
            given_up,
            Delivery::new(&Debit, &b),
        ];
        assert_eq!(
            steps(&batch, POLICY),
            [
                Step::Together(0..2),
                Step::Together(2..3),
                Step::Alone(3),
                Step::Together(4..5)
            ]
        );
    }

    #[test]
    fn two_handlers_of_one_name_never_share_a_run() {
        let (a, b) = (message("a"), message("b"));
        let (one, other) = (Arc::new(Debit), Arc::new(Debit));
        let batch = [
            Delivery::new(one.as_ref(), &a),
            Delivery::new(other.as_ref(), &b),
        ];
        assert_eq!(
            steps(&batch, POLICY),
            [Step::Together(0..1), Step::Together(1..2)]
        );
    }
}
