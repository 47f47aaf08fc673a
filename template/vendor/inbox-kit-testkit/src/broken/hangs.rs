//! Mistakes that block forever. Neither database, nor Rust, sees a
//! deadlock in them, so nothing fails: the delivery simply never ends. The
//! harness's watchdog (`harness::hangs`) turns that into a failure naming
//! the test, the scenario and what it waited for; the teeth tests run each
//! in a test process of its own, since ending that process is how a hang
//! fails.

use std::sync::{Arc, Condvar, Mutex};

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::inbox::Outcome;

use super::{apply_and_commit, insert_first, one_at_a_time};
use crate::harness::env::now_millis;
use crate::harness::{Fixture, InboxUnderTest, Project};

/// The claim written twice, "so that it survives a rollback": once in the
/// delivery's transaction, then again on a second connection, which waits
/// for the row that transaction holds (on SQLite, for the write lock it
/// holds) with no limit. The transaction waits for the second connection,
/// the second connection for the transaction: two sessions driven by one
/// thread, a deadlock no database can see. Hangs the first delivery of
/// every scenario.
pub struct ClaimsOnASecondConnection;

impl<P: Project> InboxUnderTest<P> for ClaimsOnASecondConnection {
    fn name(&self) -> String {
        "claims again on a second connection".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        let mut second = fixture.raw_waiting_forever();
        one_at_a_time::<P>(fixture, move |raw, handler, message| {
            let (consumer, id) = (handler.consumer(), message.id.as_str());
            raw.begin()?;
            if !raw.record(consumer, id, now_millis())? {
                raw.rollback();
                return Ok(Outcome::Duplicate);
            }
            second.record(consumer, id, now_millis())?;
            apply_and_commit(raw, handler, message)
        })
    }
}

/// Every worker waits, before its first delivery, until the pool it
/// expects is complete: [`WaitsForEveryWorker::POOL`] workers, as many as
/// the parallel test starts. Passes parallel, where they all start; with
/// one worker (run twice, failure then redelivery...) the signal never
/// comes.
#[derive(Default)]
pub struct WaitsForEveryWorker {
    started: Arc<(Mutex<usize>, Condvar)>,
}

impl WaitsForEveryWorker {
    pub const POOL: usize = 4;

    pub fn new() -> Self {
        Self::default()
    }
}

impl<P: Project> InboxUnderTest<P> for WaitsForEveryWorker {
    fn name(&self) -> String {
        format!("waits for {} workers", Self::POOL)
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        let started = self.started.clone();
        *started.0.lock().expect("pool") += 1;
        started.1.notify_all();
        one_at_a_time::<P>(fixture, move |raw, handler, message| {
            let (count, all_started) = &*started;
            drop(
                all_started
                    .wait_while(count.lock().expect("pool"), |count| *count < Self::POOL)
                    .expect("pool"),
            );
            insert_first(raw, handler, message)
        })
    }
}
