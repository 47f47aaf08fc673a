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

use crate::inbox::Policy;

/// One step of a batch, in the batch's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// These deliveries (positions in the batch), through the set-based
    /// path of their common handler.
    Together(Range<usize>),
    /// This delivery, one at a time.
    Alone(usize),
}

/// What the batching needs to know of one delivery.
pub trait Batched {
    /// The id of the message it delivers.
    fn message_id(&self) -> &str;
    /// How many times the source has delivered it, this time included.
    fn delivered(&self) -> u32;
    /// Whether its handler has a set-based path.
    fn has_set_based(&self) -> bool;
    /// Whether `self` and `other` go to one handler: the same one, not
    /// only one of the same name.
    fn same_handler(&self, other: &Self) -> bool;
}

/// The steps that apply `batch`.
pub fn steps<D: Batched>(batch: &[D], policy: Policy) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut run: Option<(Range<usize>, HashSet<&str>)> = None;
    for (at, delivery) in batch.iter().enumerate() {
        let id = delivery.message_id();
        let joins = run.as_mut().is_some_and(|(range, ids)| {
            batch[range.start].same_handler(delivery)
                && !ids.contains(id)
                && !policy.gave_up_on(delivery.delivered())
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
        if delivery.has_set_based() && !policy.gave_up_on(delivery.delivered()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A delivery as the batching sees it; `handler` stands for the
    /// handler object it goes to.
    struct Fake {
        id: &'static str,
        handler: u8,
        delivered: u32,
    }

    const DEBIT: u8 = 1;
    const OTHER_DEBIT: u8 = 2;
    /// The one handler here without a set-based path.
    const REFUND: u8 = 3;
    const POLICY: Policy = Policy { max_attempts: 3 };

    fn to(handler: u8, id: &'static str) -> Fake {
        Fake {
            id,
            handler,
            delivered: 1,
        }
    }

    impl Batched for Fake {
        fn message_id(&self) -> &str {
            self.id
        }
        fn delivered(&self) -> u32 {
            self.delivered
        }
        fn has_set_based(&self) -> bool {
            self.handler != REFUND
        }
        fn same_handler(&self, other: &Self) -> bool {
            self.handler == other.handler
        }
    }

    #[test]
    fn consecutive_new_messages_of_one_set_based_handler_go_together() {
        let batch = [
            to(DEBIT, "a"),
            to(DEBIT, "b"),
            to(REFUND, "b"),
            to(DEBIT, "c"),
        ];
        assert_eq!(
            steps(&batch, POLICY),
            [Step::Together(0..2), Step::Alone(2), Step::Together(3..4)],
            "refund has no set-based path, and the order is kept"
        );
    }

    #[test]
    fn a_repeat_or_a_given_up_delivery_ends_the_run() {
        let given_up = Fake {
            delivered: POLICY.max_attempts + 1,
            ..to(DEBIT, "b")
        };
        let batch = [
            to(DEBIT, "a"),
            to(DEBIT, "b"),
            to(DEBIT, "a"),
            given_up,
            to(DEBIT, "b"),
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
    fn the_last_chance_still_joins_a_run() {
        let last = Fake {
            delivered: POLICY.max_attempts,
            ..to(DEBIT, "b")
        };
        assert_eq!(
            steps(&[to(DEBIT, "a"), last], POLICY),
            [Step::Together(0..2)]
        );
    }

    #[test]
    fn two_handlers_never_share_a_run() {
        let batch = [to(DEBIT, "a"), to(OTHER_DEBIT, "b")];
        assert_eq!(
            steps(&batch, POLICY),
            [Step::Together(0..1), Step::Together(1..2)]
        );
    }

    #[test]
    fn an_empty_batch_has_no_steps() {
        assert_eq!(steps::<Fake>(&[], POLICY), []);
    }
}
