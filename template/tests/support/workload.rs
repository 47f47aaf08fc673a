//! The benchmarks' workload, written once: `payment.captured` events
//! debiting [`ACCOUNTS`] accounts, [`DUPLICATE_SHARE`] percent of the
//! deliveries a second copy of an earlier event (most of them recent, as
//! broker retries are), and a fresh database with every account open.

use {{crate_name}}::store::Store;

use super::database::Fixture;
use super::harness::Prng;

/// Accounts the payments debit, each opened with a balance no run spends.
pub const ACCOUNTS: i64 = 1_000;

/// Percent of the deliveries that repeat an earlier event.
pub const DUPLICATE_SHARE: u64 = 30;

/// One delivery of the workload.
pub struct Payment {
    /// The account it debits: also the partition key.
    pub account: i64,
    /// Its JSON envelope (`id`, `type`, `payload`).
    pub envelope: serde_json::Value,
}

/// An endless, seeded sequence of deliveries.
pub struct Payments {
    random: Prng,
    distinct: usize,
}

impl Payments {
    pub fn new(seed: u64) -> Self {
        Self {
            random: Prng::new(seed),
            distinct: 0,
        }
    }

    /// How many distinct events the deliveries so far carried.
    pub fn distinct(&self) -> usize {
        self.distinct
    }
}

impl Iterator for Payments {
    type Item = Payment;

    fn next(&mut self) -> Option<Payment> {
        let id = if self.distinct > 0 && self.random.below(100) < DUPLICATE_SHARE {
            let back = self.random.below(self.distinct.min(1_000) as u64) as usize;
            self.distinct - 1 - back
        } else {
            self.distinct += 1;
            self.distinct - 1
        };
        let account = 1 + id as i64 % ACCOUNTS;
        Some(Payment {
            account,
            envelope: serde_json::json!({
                "id": format!("m-{id:08}"),
                "type": "payment.captured",
                "payload": { "account": account, "amount": 1 + id % 100 },
            }),
        })
    }
}

/// A fresh database with every account the payments debit, and without
/// the tests' tripwires: the benchmarks measure the consumer's own schema.
pub fn fixture_with_accounts() -> Fixture {
    let fixture = Fixture::without_tripwires();
    fixture
        .database()
        .with_tables(|tables| {
            (1..=ACCOUNTS).try_for_each(|account| tables.open_account(account, 1_000_000_000))
        })
        .expect("accounts");
    fixture
}
