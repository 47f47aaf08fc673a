//! The second line of defence: each handler's own tables keep a unique key
//! at exactly the right granularity. A repeat that gets past the inbox
//! (resent with other content under the same id, or the same fact under a
//! new message id, where the business id lives in the payload) changes
//! nothing; the legitimate fan-out is still allowed.

use crate::support::harness::{RealInbox, THROUGH_THE_INBOX, business_key};
use crate::support::subjects::{ACCOUNT, DebitSubject, NotifySubject, RefundSubject};

#[test]
fn the_ledger_refuses_a_payment_debited_before() {
    let play = business_key(&DebitSubject::real(), &RealInbox::BATCHED, 20)
        .expect("the ledger's key refuses every repeat");
    assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 800)]);
    assert_eq!(play.observed.state.debits.len(), 20);
}

#[test]
fn the_outbox_refuses_a_notification_queued_before_but_keeps_every_channel() {
    let play = business_key(&NotifySubject::real(), &RealInbox::BATCHED, 20)
        .expect("the outbox's key refuses every repeat");
    assert_eq!(play.observed.state.len(), 40, "20 events x 2 channels");
}

#[test]
fn the_refunds_table_refuses_a_refund_repeated_under_a_new_message_id() {
    let play = business_key(&RefundSubject::real(), &RealInbox::BATCHED, 20)
        .expect("the refund id refuses every repeat");
    let refunds = play.step(THROUGH_THE_INBOX).state.refunds.len();
    assert!(refunds > 0, "some refunds applied");
    assert_eq!(
        play.observed.state.refunds.len(),
        refunds,
        "no repeat credited"
    );
    assert_eq!(
        play.observed.outcomes.applied, 0,
        "{}",
        play.observed.outcomes
    );
}
