//! The transactional inbox: how one delivery is applied at most once and at
//! least once.
//!
//! Brokers deliver at least once, so the same message arrives again after a
//! network retry, a rebalance or a crash before the acknowledgement. For each
//! delivery the inbox, in ONE transaction:
//!
//! 1. inserts `(consumer, message_id)` into a table whose primary key is
//!    exactly that pair; finding the pair already there means "already
//!    processed", so the delivery is a [`Outcome::Duplicate`] and nothing
//!    else happens;
//! 2. runs the handler's business update on the same transaction;
//! 3. commits. If the handler fails, the inbox row is rolled back with the
//!    update, so the broker's redelivery applies the message once.
//!
//! Two tempting shortcuts are wrong, and the tests in `tests/` prove it:
//! checking with a SELECT before acting lets parallel workers all see
//! "new", and recording the id in its own transaction before the update
//! loses the message forever when the update fails.
//!
//! A message that keeps failing is counted and, after
//! [`Policy::max_attempts`], parked as a dead letter (see [`DeadLetters`]),
//! so it never blocks the messages behind it and is never silently lost.
//!
//! The seam between the consumer and its database, [`Inbox`] and
//! [`DeadLetters`], is the runtime's (`inbox_kit_runtime::delivery`), for
//! this service's [`Handlers`]: it says what an inbox does, and each
//! database's inbox says how (SQLite's is the runtime's too,
//! `inbox_kit_runtime::sqlite`; PostgreSQL's is still this crate's
//! `postgres` module). The test
//! harness plugs known-broken implementations into the same seam to show
//! that the tests catch them.

pub use inbox_kit_runtime::delivery::{DeadLetters, Inbox};
pub use inbox_kit_runtime::inbox::{DeadLetter, FAILED_INDEX, Outcome, Policy, unix_millis};
pub use inbox_kit_runtime::steps::{Step, steps};
pub use inbox_kit_runtime::storage::{StorageError, StorageFault};

use crate::handlers::Handlers;

/// One message for one of this service's consumers.
pub type Delivery<'a> = inbox_kit_runtime::delivery::Delivery<'a, Handlers>;
