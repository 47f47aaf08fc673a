//! Rules across messages: the refunds of one payment, delivered at once by
//! several workers of two processes and never routed by partition key,
//! end as some serial order of them would, never above what was paid.

use crate::support::harness::{RealInbox, rules_across_messages};
use crate::support::subjects::{DISPUTED_AMOUNT, RefundSubject};

#[test]
fn refunds_of_one_payment_delivered_at_once_end_as_some_serial_order() {
    for inbox in RealInbox::ALL {
        let play = rules_across_messages(&RefundSubject::real(), &inbox)
            .expect("a serial order explains every round");
        let refunded: i64 = play
            .observed
            .state
            .refunds
            .iter()
            .filter(|refund| refund.payment_id.starts_with("disputed-"))
            .map(|refund| refund.amount)
            .sum();
        let rounds = play.messages.len() / 5;
        assert!(rounds >= 1, "no round was played");
        assert!(
            refunded <= DISPUTED_AMOUNT * rounds as i64,
            "refunded {refunded} in {rounds} rounds of payments of {DISPUTED_AMOUNT}"
        );
    }
}
