//! Faults a fixture sets off in its own database, on demand: a COMMIT that
//! fails, a claim refused for a reason other than a duplicate key, a claim
//! held by another transaction, races lost, and an inbox that gives up on
//! a lock. Each database arms them its own way (triggers, a lock timeout,
//! a second connection); the scenarios only ask for them.

use std::time::Duration;

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::inbox::Policy;

use inbox_kit_runtime::handler::Registry;

/// The faults a fixture can set off, its inbox delivering to registry `R`.
pub trait Tripwires<R: Registry> {
    /// While `on`, every COMMIT on this database fails.
    fn fail_commits(&self, on: bool);

    /// From now on, claiming any of `message_ids` fails with an error that
    /// is not a duplicate key, until [`Tripwires::heal_claims`].
    fn refuse_claims(&self, message_ids: &[&str]);

    /// Claims are accepted again.
    fn heal_claims(&self);

    /// Another connection claims (consumer, id) in a transaction it keeps
    /// open until the holder is released.
    fn hold_claim(&self, consumer: &str, id: &str) -> Box<dyn HeldClaim>;

    /// Races lost on demand, on a database that has them (`None` where one
    /// writer at a time waits for the lock instead).
    fn conflicts(&self) -> Option<Box<dyn Conflicts + '_>>;

    /// The real inbox, giving up on a lock after `wait`.
    fn impatient_inbox(&self, policy: Policy, wait: Duration) -> Box<dyn Inbox<R>>;
}

/// A claim another transaction holds ([`Tripwires::hold_claim`]).
pub trait HeldClaim {
    /// Rolls the other transaction back: the claim is free again.
    fn release(self: Box<Self>);
}

/// Claims that lose a race on demand ([`Tripwires::conflicts`]).
pub trait Conflicts {
    /// How many times the inbox tries a batch again after it lost a race,
    /// before it reports the conflict.
    fn retries(&self) -> u32;

    /// From now on, the next `times` tries to claim `message_id` lose a
    /// race; the tries after them succeed.
    fn lose_claims(&self, message_id: &str, times: u32);

    /// How many claims of tripped messages were tried so far.
    fn tries(&self) -> u64;
}
