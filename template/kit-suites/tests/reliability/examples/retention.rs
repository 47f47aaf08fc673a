//! Retention at the edge: a purge deletes inbox rows and attempt counts a
//! minute older than its window, keeps those a minute younger (their
//! redeliveries are still duplicates) and every dead letter.

use crate::support::harness::{AFTER_PURGE, RealPurge, purge_edge};
use crate::support::subjects::{ACCOUNT, DebitSubject};

#[test]
fn a_purge_keeps_every_row_inside_its_window() {
    let play = purge_edge(&DebitSubject::real(), &RealPurge, 10).expect("exact edge");
    assert_eq!(play.step(AFTER_PURGE).inbox_rows, 10);
    assert_eq!(play.step(AFTER_PURGE).attempts, 10);
    assert_eq!(play.step(AFTER_PURGE).dead_letters.len(), 20);
    assert_eq!(play.observed.outcomes.duplicate, 10);
    assert_eq!(play.observed.state.balances, vec![(ACCOUNT, 1_000)]);
}
