//! **The database's faults are never the message's**: a storage fault in
//! a handler's own write, a claim that waits for another transaction until
//! its lock times out, and a claim the database refuses for any reason but
//! a duplicate key, fail the whole batch without counting a failure,
//! without a dead letter, and without calling anything a duplicate; the
//! redelivery applies each message once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use inbox_kit_runtime::delivery::Inbox;
use inbox_kit_runtime::handler::{Handler, HandlerError, Subscriber};
use inbox_kit_runtime::inbox::Policy;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Summary;
use inbox_kit_runtime::storage::{StorageError, StorageFault};

use crate::harness::{
    Expected, InboxUnderTest, Observed, Play, RealInbox, Subject, Violation, fixture_for, hangs,
    observe,
};
use crate::harness::{Fault, applied_facts, deliver_all, play_through_fault};
use crate::harness::{PlayOf, Project, Tripwires};

/// The step observed after the faulty deliveries.
pub const AFTER_FAULTS: &str = "after the deliveries the database failed";

/// Attempts the scenarios allow before a dead letter: fewer than the
/// faults they inject, so that a fault counted against a message parks it.
const MAX_ATTEMPTS: u32 = 2;
/// Faulty deliveries of each message.
pub const FAULTS: u32 = 3;

/// The handler, except that its last write fails with a storage fault
/// (`Unavailable`, as a full disk or a lost connection reports it) for
/// the first [`FAULTS`] attempts at one message.
pub struct FaultyWrites<H: ?Sized> {
    inner: Arc<H>,
    id: String,
    left: Mutex<u32>,
}

impl<H: ?Sized> FaultyWrites<H> {
    pub fn new(inner: Arc<H>, id: &str) -> Self {
        Self {
            inner,
            id: id.to_owned(),
            left: Mutex::new(FAULTS),
        }
    }
}

impl<E, H: Subscriber<E> + ?Sized> Subscriber<E> for FaultyWrites<H> {
    fn consumer(&self) -> &'static str {
        self.inner.consumer()
    }

    fn subscribes_to(&self, event: &E) -> bool {
        self.inner.subscribes_to(event)
    }
}

impl<E, T: ?Sized, H: Handler<E, T> + ?Sized> Handler<E, T> for FaultyWrites<H> {
    fn apply(&self, tables: &mut T, message: &Message<E>) -> Result<(), HandlerError> {
        self.inner.apply(tables, message)?;
        let mut left = self.left.lock().expect("faults left");
        if message.id.as_str() != self.id || *left == 0 {
            return Ok(());
        }
        *left -= 1;
        Err(StorageError::new(
            StorageFault::Unavailable,
            "injected: the database refused the handler's write (disk full)",
        )
        .into())
    }
}

pub fn play_storage_fault_in_handler<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "storage fault in the handler via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let messages = applied_facts(subject, count);
    // The first message of every batch faults, so every batch fails.
    let faulty = FaultyWrites::new(subject.handler(), messages[0].id.as_str());
    let mut worker = inbox.open(&fixture);
    let fault = Fault::<S::Project> {
        scenario: format!("storage fault in the handler's write via {}", inbox.name()),
        step: AFTER_FAULTS,
        rounds: FAULTS,
        handler: &faulty,
        messages,
    };
    // The faulty writes stop by themselves after their last fault.
    play_through_fault(subject, &fixture, worker.as_mut(), fault, || ())
}

/// Judged: after the faults nothing applied, nothing settled, no failure
/// counted and no dead letter; after the redelivery, each message once.
pub fn storage_fault_in_handler<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    let play = play_storage_fault_in_handler(subject, inbox, count);
    judge_through_fault(play, subject, AFTER_FAULTS)
}

/// Judges a fault's play: at [`AFTER_FAULTS`] nothing held against the
/// messages (a violation says it was `during` the fault), at the end each
/// message once.
fn judge_through_fault<S: Subject>(
    play: PlayOf<S>,
    subject: &S,
    during: &str,
) -> Result<PlayOf<S>, Violation> {
    let problems = nothing_held_against(play.step(AFTER_FAULTS), subject)?;
    if !problems.is_empty() {
        return Err(play.violation(&format!("{during}: {}", problems.join("; "))));
    }
    play.judge(subject)
}

/// What is wrong with `faulted`, the state after batches the database
/// failed: anything applied or settled, a failure counted, a dead letter.
fn nothing_held_against<S: Subject>(
    faulted: &Observed<S::State>,
    subject: &S,
) -> Result<Vec<String>, Violation> {
    let mut problems = Expected::of(subject, &[])?.problems(&faulted.state, &faulted.refused());
    let settled = Summary {
        failed: 0,
        ..faulted.outcomes
    };
    if settled != Summary::default() {
        problems.push(format!(
            "outcomes {} although the database failed every batch (nothing may be acknowledged)",
            faulted.outcomes
        ));
    }
    if !faulted.dead_letters.is_empty() {
        problems.push(format!(
            "dead letters {:?}: a database fault was held against the message",
            faulted.dead_letters
        ));
    }
    if faulted.attempts > 0 {
        problems.push(format!(
            "{} failures counted: a database fault was held against the message",
            faulted.attempts
        ));
    }
    Ok(problems)
}

/// How an inbox that gives up on a lock is opened: the real one, or a
/// broken one.
pub trait ImpatientUnderTest<P: Project>: Sync {
    fn name(&self) -> String;
    fn open(
        &self,
        fixture: &P::Fixture,
        policy: Policy,
        wait: Duration,
    ) -> Box<dyn Inbox<P::Registry>>;
}

/// The real inbox, impatient.
pub struct RealImpatient;

impl<P: Project> ImpatientUnderTest<P> for RealImpatient {
    fn name(&self) -> String {
        "real inbox".into()
    }
    fn open(
        &self,
        fixture: &P::Fixture,
        policy: Policy,
        wait: Duration,
    ) -> Box<dyn Inbox<P::Registry>> {
        fixture.impatient_inbox(policy, wait)
    }
}

/// How long the impatient inbox waits for a lock.
pub const LOCK_WAIT: Duration = Duration::from_millis(200);

/// Another transaction claims the first message and keeps its transaction
/// open; the inbox under test, which waits at most [`LOCK_WAIT`] for a
/// lock, delivers every message [`FAULTS`] times, more than the attempts
/// it allows (a timeout is not a failure, so none may count). Then the
/// other transaction rolls back, and everything is delivered again.
pub fn play_claim_held_elsewhere<S: Subject>(
    subject: &S,
    inbox: &dyn ImpatientUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "claim held elsewhere via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(&RealInbox::BATCHED, &[subject]);
    let handler = subject.handler();
    let messages = applied_facts(subject, count);
    let policy = Policy {
        max_attempts: MAX_ATTEMPTS,
    };
    let mut worker = inbox.open(&fixture, policy, LOCK_WAIT);
    let holder = fixture.hold_claim(handler.consumer(), messages[0].id.as_str());
    let fault = Fault::<S::Project> {
        scenario: format!("claim held by another transaction via {}", inbox.name()),
        step: AFTER_FAULTS,
        rounds: FAULTS,
        handler: handler.as_ref(),
        messages,
    };
    play_through_fault(subject, &fixture, worker.as_mut(), fault, || {
        holder.release()
    })
}

/// Judged: while the claim was held, nothing applied and nothing was
/// called a duplicate (the other transaction had committed nothing), no
/// failure was counted; after it rolled back, each message applies once.
pub fn claim_held_elsewhere<S: Subject>(
    subject: &S,
    inbox: &dyn ImpatientUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    let play = play_claim_held_elsewhere(subject, inbox, count);
    judge_through_fault(play, subject, "while another transaction held a claim")
}

/// The database refuses the first message's inbox row with an error that
/// is not a duplicate key (a constraint of its own, as a trigger, a check
/// or a full table raises it); every message is delivered [`FAULTS`]
/// times, more than the attempts allowed. Then the database accepts it
/// again, and everything is delivered once more.
pub fn play_claim_refused<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> PlayOf<S> {
    let _scenario = hangs::scenario(format!(
        "claim refused via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let handler = subject.handler();
    let messages = applied_facts(subject, count);
    fixture.refuse_claims(&[messages[0].id.as_str()]);
    let mut worker = inbox.open(&fixture);
    let fault = Fault::<S::Project> {
        scenario: format!("claim refused by the database via {}", inbox.name()),
        step: AFTER_FAULTS,
        rounds: FAULTS,
        handler: handler.as_ref(),
        messages,
    };
    play_through_fault(subject, &fixture, worker.as_mut(), fault, || {
        fixture.heal_claims()
    })
}

/// Judged: while the claim was refused, nothing applied, nothing was called
/// a duplicate (only a duplicate key means that), no failure was counted;
/// once accepted, each message applies once.
pub fn claim_refused<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    let play = play_claim_refused(subject, inbox, count);
    judge_through_fault(play, subject, "while the database refused a claim")
}

/// The step observed after the batch that lost more races than are retried.
pub const AFTER_CONFLICTS: &str = "after a batch that lost every race it was retried for";

/// **Lost races are retried, up to a limit** (where the database has them):
/// a batch whose first claim loses a race as many times as the inbox
/// retries applies on its last try; one that loses once more fails as a
/// whole without counting anything against its messages, and its
/// redelivery applies it. `Ok(None)` on a database without such races.
pub fn conflicts_retried<S: Subject>(
    subject: &S,
    inbox: &dyn InboxUnderTest<S::Project>,
) -> Result<Option<PlayOf<S>>, Violation> {
    let _scenario = hangs::scenario(format!(
        "conflicts retried via {}, for `{}`",
        inbox.name(),
        subject.handler().consumer()
    ));
    let fixture = fixture_for(inbox, &[subject]);
    let Some(conflicts) = fixture.conflicts() else {
        return Ok(None);
    };
    let retries = conflicts.retries();
    let handler = subject.handler();
    let messages = applied_facts(subject, 6);
    let (retried, given_up) = messages.split_at(3);
    let mut worker = inbox.open(&fixture);
    let mut tries = Vec::new();
    for (batch, losses) in [(retried, retries), (given_up, retries + 1)] {
        let before = conflicts.tries();
        conflicts.lose_claims(batch[0].id.as_str(), losses);
        let outcomes = deliver_all(worker.as_mut(), handler.as_ref(), batch);
        tries.push((outcomes, conflicts.tries() - before));
    }
    let after_conflicts = observe(&fixture, subject, tries[1].0);
    // The judged end counts the batch that applied and the redelivery;
    // the failed batch is judged at its step.
    let mut outcomes = tries[0].0;
    outcomes += deliver_all(worker.as_mut(), handler.as_ref(), given_up);
    let play = Play {
        scenario: format!("lost races retried via {}", inbox.name()),
        consumer: handler.consumer().to_owned(),
        deliveries: messages.len() as u64,
        steps: vec![(AFTER_CONFLICTS.to_owned(), after_conflicts)],
        observed: observe(&fixture, subject, outcomes),
        messages: messages.clone(),
    };
    let tried = u64::from(retries) + 1;
    let mut problems = Vec::new();
    let applied = |count: usize| Summary {
        applied: count as u64,
        ..Summary::default()
    };
    if tries[0] != (applied(retried.len()), tried) {
        problems.push(format!(
            "a batch that lost {retries} races gave {} after {} tries: it must apply on try {tried}",
            tries[0].0, tries[0].1
        ));
    }
    if tries[1].1 != tried {
        problems.push(format!(
            "a batch that kept losing was tried {} times, not {tried} (the first try and {retries} retries)",
            tries[1].1
        ));
    }
    let gave_up = play.step(AFTER_CONFLICTS);
    problems.extend(Expected::of(subject, retried)?.problems(&gave_up.state, &gave_up.refused()));
    if gave_up.outcomes
        != (Summary {
            failed: given_up.len() as u64,
            ..Summary::default()
        })
        || gave_up.attempts > 0
        || !gave_up.dead_letters.is_empty()
    {
        problems.push(format!(
            "the batch that kept losing gave {} with {} failures counted and dead letters {:?}: it must fail whole, nothing held against its messages",
            gave_up.outcomes, gave_up.attempts, gave_up.dead_letters
        ));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("{AFTER_CONFLICTS}: {}", problems.join("; "))));
    }
    play.judge(subject).map(Some)
}
