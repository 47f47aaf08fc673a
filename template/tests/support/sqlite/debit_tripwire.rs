//! `debit`'s own tripwire on SQLite: a debit of a payment listed fails at
//! its statement, or ends its whole transaction. The triggers are the test
//! kit's (`SqliteFixture::arm_statement_tripwire`); this names `debit`'s
//! table, and the column that holds the payment's message id.

use crate::support::harness::{StatementTripwire, ThisProject};

use super::Fixture;

/// The table `debit` writes, and its column holding the message id.
const DEBITS: (&str, &str) = ("debits", "payment_id");

impl StatementTripwire<ThisProject> for Fixture {
    fn fail_statements(&self, message_ids: &[&str]) {
        self.arm_statement_tripwire(DEBITS.0, DEBITS.1, message_ids, false);
    }

    /// SQLite can (`RAISE(ROLLBACK)`).
    fn end_transaction_at(&self, message_ids: &[&str]) -> bool {
        self.arm_statement_tripwire(DEBITS.0, DEBITS.1, message_ids, true);
        true
    }

    fn heal_statements(&self) {
        self.disarm_statement_tripwire(DEBITS.0, DEBITS.1);
    }
}
