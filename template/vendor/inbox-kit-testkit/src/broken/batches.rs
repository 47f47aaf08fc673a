//! Mistakes in the set-based path (see `SetBased`): what happens when a
//! run's attempt fails decides whether one bad message takes its siblings
//! down, or applies them twice.

use inbox_kit_runtime::delivery::{Delivery, Inbox};
use inbox_kit_runtime::inbox::{Outcome, Policy};
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::steps::{Step, steps};
use inbox_kit_runtime::storage::StorageError;

use crate::harness::env::now_millis;
use crate::harness::{Fixture, InboxUnderTest, Project, Raw};

/// A failed set-based attempt is rolled back, claims and all, and every
/// delivery of its run reported failed: no fallback to one at a time, so
/// one bad message fails its siblings with it, on every redelivery, until
/// it is parked. Caught by the redelivery scenario: the healthy messages
/// must apply at their first delivery.
pub struct NoFallback;

/// A failed set-based attempt falls back to one delivery at a time but
/// keeps what the attempt wrote (released, not rolled back to its
/// savepoint): the siblings the attempt applied are applied again alone.
/// Caught by the redelivery scenario: twice the debits, or the ledger's
/// own key refusing the second.
pub struct FallbackKeepsTheAttempt;

impl<P: Project> InboxUnderTest<P> for NoFallback {
    fn name(&self) -> String {
        "set-based runs that fail all together".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        Box::new(BrokenRuns {
            raw: fixture.raw(),
            keeps_the_attempt: false,
        })
    }
}

impl<P: Project> InboxUnderTest<P> for FallbackKeepsTheAttempt {
    fn name(&self) -> String {
        "a fallback that keeps the failed attempt's writes".into()
    }
    fn open(&self, fixture: &P::Fixture) -> Box<dyn Inbox<P::Registry>> {
        Box::new(BrokenRuns {
            raw: fixture.raw(),
            keeps_the_attempt: true,
        })
    }
}

/// The real inbox's steps, written on a raw connection, wrong only where a
/// run's attempt fails.
struct BrokenRuns<P: Project> {
    raw: Box<dyn Raw<P>>,
    keeps_the_attempt: bool,
}

impl<P: Project> Inbox<P::Registry> for BrokenRuns<P> {
    fn deliver_batch(
        &mut self,
        batch: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        self.raw.begin()?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for step in steps(batch, Policy::default()) {
            match step {
                Step::Alone(at) => outcomes.push(self.alone(&batch[at], true)?),
                Step::Together(run) => outcomes.extend(self.together(&batch[run])?),
            }
        }
        self.raw.commit()?;
        Ok(outcomes)
    }
}

impl<P: Project> BrokenRuns<P> {
    /// One delivery under its savepoint, claimed here unless `claim` is
    /// false (claimed already: its claim is given back if it fails).
    fn alone(
        &mut self,
        delivery: &Delivery<'_, P::Registry>,
        claim: bool,
    ) -> Result<Outcome, StorageError> {
        let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
        self.raw.run("SAVEPOINT delivery")?;
        if claim && !self.raw.record(consumer, id, now_millis())? {
            self.raw.run("RELEASE SAVEPOINT delivery")?;
            return Ok(Outcome::Duplicate);
        }
        match self.raw.apply(delivery.handler, delivery.message) {
            Ok(()) => {
                self.raw.run("RELEASE SAVEPOINT delivery")?;
                Ok(Outcome::Applied)
            }
            Err(error) => {
                self.raw
                    .run("ROLLBACK TO SAVEPOINT delivery; RELEASE SAVEPOINT delivery")?;
                if !claim {
                    self.raw.delete_inbox_row(consumer, id)?;
                }
                Ok(Outcome::Failed(error.to_string()))
            }
        }
    }

    fn together(
        &mut self,
        run: &[Delivery<'_, P::Registry>],
    ) -> Result<Vec<Outcome>, StorageError> {
        let mut outcomes = Vec::with_capacity(run.len());
        let mut new = Vec::new();
        for (at, delivery) in run.iter().enumerate() {
            let (consumer, id) = (delivery.handler.consumer(), delivery.message.id.as_str());
            if self.raw.record(consumer, id, now_millis())? {
                new.push(at);
                outcomes.push(Outcome::Applied);
            } else {
                outcomes.push(Outcome::Duplicate);
            }
        }
        let messages: Vec<&Message<P::Event>> = new.iter().map(|&at| run[at].message).collect();
        self.raw.run("SAVEPOINT run")?;
        let Err(error) = self.raw.apply_all(run[0].handler, &messages) else {
            self.raw.run("RELEASE SAVEPOINT run")?;
            return Ok(outcomes);
        };
        if self.keeps_the_attempt {
            self.raw.run("RELEASE SAVEPOINT run")?;
            for at in new {
                outcomes[at] = self.alone(&run[at], false)?;
            }
        } else {
            self.raw
                .run("ROLLBACK TO SAVEPOINT run; RELEASE SAVEPOINT run")?;
            for at in new {
                let delivery = &run[at];
                self.raw
                    .delete_inbox_row(delivery.handler.consumer(), delivery.message.id.as_str())?;
                outcomes[at] = Outcome::Failed(error.to_string());
            }
        }
        Ok(outcomes)
    }
}
