//! Through the real pipeline, fed by a source double: each message is
//! settled once, only after what its verdict says is committed, and the
//! messages about one thing go through one worker in the source's order.

use crate::support::harness::{RealSource, ThisProject, real_route, through_the_pipeline};
use crate::support::subjects::{DebitSubject, NotifySubject, RefundSubject};

#[test]
fn messages_are_settled_after_commit_and_routed_by_partition_key() {
    through_the_pipeline(
        &DebitSubject::real(),
        &RealSource,
        real_route::<ThisProject>(),
    )
    .expect("debit");
    through_the_pipeline(
        &NotifySubject::real(),
        &RealSource,
        real_route::<ThisProject>(),
    )
    .expect("notify");
    let play = through_the_pipeline(
        &RefundSubject::real(),
        &RealSource,
        real_route::<ThisProject>(),
    )
    .expect("refund: the disputed refunds in the source's order");
    assert!(!play.observed.state.refunds.is_empty());
}
