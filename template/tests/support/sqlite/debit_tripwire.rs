//! `debit`'s own tripwire on SQLite, made when a test first arms it: a
//! debit of a payment listed in `debit_tripwire` fails at its statement
//! (`whole` = 0), or ends its whole transaction with `RAISE(ROLLBACK)`
//! (`whole` = 1).

use crate::support::harness::DebitTripwire;

use super::Fixture;

/// The tripwire's table and triggers, each made if missing.
const DEBIT_TRIPWIRE: &str = "
CREATE TABLE IF NOT EXISTS debit_tripwire (payment_id TEXT PRIMARY KEY, whole INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS debit_tripwire_statement BEFORE INSERT ON debits
WHEN EXISTS (SELECT 1 FROM debit_tripwire WHERE payment_id = NEW.payment_id AND whole = 0)
BEGIN
    SELECT RAISE(ABORT, 'tripwire: this debit fails');
END;
CREATE TRIGGER IF NOT EXISTS debit_tripwire_transaction BEFORE INSERT ON debits
WHEN EXISTS (SELECT 1 FROM debit_tripwire WHERE payment_id = NEW.payment_id AND whole = 1)
BEGIN
    SELECT RAISE(ROLLBACK, 'tripwire: this debit ends its transaction');
END;";

impl DebitTripwire for Fixture {
    fn fail_debit_statements(&self, payment_ids: &[&str]) {
        trip_debits(self, payment_ids, 0);
    }

    /// SQLite can (`RAISE(ROLLBACK)`).
    fn end_transaction_at_debits(&self, payment_ids: &[&str]) -> bool {
        trip_debits(self, payment_ids, 1);
        true
    }

    fn heal_debits(&self) {
        self.execute(&format!("{DEBIT_TRIPWIRE}\nDELETE FROM debit_tripwire;"));
    }
}

fn trip_debits(fixture: &Fixture, payment_ids: &[&str], whole: i64) {
    let db = fixture.database().connect().expect("connect");
    db.execute_batch(DEBIT_TRIPWIRE)
        .expect("make the debit tripwire");
    for id in payment_ids {
        db.execute(
            "INSERT OR REPLACE INTO debit_tripwire (payment_id, whole) VALUES (?1, ?2)",
            rusqlite::params![id, whole],
        )
        .expect("arm the debit tripwire");
    }
}
