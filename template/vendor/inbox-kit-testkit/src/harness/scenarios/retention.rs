//! **Purge at the window's edge**: a purge deletes inbox rows and attempt
//! counts older than its window and keeps every younger one, so that a
//! late redelivery inside the window is still a duplicate and a failing
//! message still reaches its dead letter; it never deletes a dead letter,
//! however old, since a dead letter waits for a person. Sent notifications
//! go by the same window; one not sent yet stays, however old, or the
//! outbox loses it. It reports what it deleted exactly, and its progress
//! only ever grows, up to that total, by at most a window's keys at a time
//! (each transaction stays short, so deliveries never wait long behind it).

use std::time::Duration;

use inbox_kit_runtime::envelope::Wire;
use inbox_kit_runtime::inbox::DeadLetter;
use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::store::Purged;

use crate::harness::env::now_millis;
use crate::harness::{
    EventOf, Expected, Fixture, Play, PlayOf, Project, RealInbox, Subject, Violation, deliver_all,
    facts, fixture_for, hangs, observe,
};

/// A purge implementation under test, on project `P`'s database.
pub trait Purger<P: Project> {
    fn name(&self) -> String;
    /// Deletes what is older than `older_than`, telling `progress` the
    /// running total of deleted rows.
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged;
}

/// The runtime's purge, the one every project ships.
pub struct RealPurge;

impl<P: Project> Purger<P> for RealPurge {
    fn name(&self) -> String {
        "real purge".into()
    }
    fn purge(
        &self,
        fixture: &P::Fixture,
        older_than: Duration,
        progress: &mut dyn FnMut(u64),
    ) -> Purged {
        fixture.purge(older_than, KEYS_PER_TRANSACTION, progress)
    }
}

/// How many keys the real purge walks per transaction here: few, so that
/// a window of expired rows that is too wide shows in the progress.
pub const KEYS_PER_TRANSACTION: u32 = 3;

/// The window the scenario purges with.
pub const WINDOW: Duration = Duration::from_secs(30 * 86_400);
/// How far inside or outside the window the rows are.
const MARGIN: Duration = Duration::from_secs(60);

/// The step observed right after the purge.
pub const AFTER_PURGE: &str = "after the purge";

/// What a purge did besides what its play observes.
pub struct PurgeReport {
    /// What the purge said it deleted.
    pub purged: Purged,
    /// The running totals it reported, in order.
    pub progress: Vec<u64>,
    /// Sent notifications left.
    pub sent_left: usize,
    /// Notifications not sent yet left.
    pub unsent_left: usize,
}

/// Records the subject's first `count` messages as received a minute
/// inside the window and the next `count` a minute outside it, with as
/// many failed attempts, dead letters, sent notifications and notifications
/// queued but not sent yet on both sides, purges, then redelivers the ones
/// inside: they must all be duplicates. The play covers the messages
/// inside the window; its step [`AFTER_PURGE`] counts the rows left.
pub fn play_purge_edge<S: Subject>(
    subject: &S,
    purger: &dyn Purger<S::Project>,
    count: usize,
) -> (PlayOf<S>, PurgeReport) {
    let _scenario = hangs::scenario(format!(
        "purge edge via {}, for `{}`",
        purger.name(),
        subject.handler().consumer()
    ));
    let inbox = RealInbox::BATCHED;
    let fixture = fixture_for(&inbox, &[subject]);
    let handler = subject.handler();
    let consumer = handler.consumer();
    let mut inside: Vec<Message<EventOf<S>>> = facts(subject, "m-", 2 * count);
    let outside = inside.split_off(count);
    let window = WINDOW.as_millis() as i64;
    let margin = MARGIN.as_millis() as i64;
    let mut raw = fixture.raw();
    for (group, age) in [(&inside, window - margin), (&outside, window + margin)] {
        let at = now_millis() - age;
        for message in group {
            let id = message.id.as_str();
            raw.record(consumer, id, at).expect("record an old row");
            let failing = format!("{id}-failing");
            raw.count_failure(consumer, &failing, "an old failure", at)
                .expect("count an old failure");
            let (event_type, payload) = message.event.encode();
            raw.dead_letter(&DeadLetter {
                consumer: consumer.to_owned(),
                message_id: format!("{id}-dead"),
                event_type: event_type.to_owned(),
                payload,
                error: "an old dead letter".to_owned(),
                attempts: 5,
                refused: false,
                dead_at: at,
            })
            .expect("write an old dead letter");
            let event = id.replace('\'', "''");
            raw.run(&format!(
                "INSERT INTO notifications (event_id, channel, account, body, queued_at, sent_at)
                 VALUES ('{event}-sent', 'email', 1, 'sent', {at}, {at}),
                        ('{event}-unsent', 'email', 1, 'not sent yet', {at}, NULL);"
            ))
            .expect("queue old notifications");
        }
    }
    let mut progress = Vec::new();
    let purged = purger.purge(&fixture, WINDOW, &mut |rows| progress.push(rows));
    let after_purge = observe(&fixture, subject, Default::default());
    let mut raw = fixture.raw();
    let mut left_ending = |suffix: &str| {
        let rows = raw
            .count(&format!(
                "SELECT count(*) FROM notifications WHERE event_id LIKE '%{suffix}'"
            ))
            .expect("count the notifications left");
        usize::try_from(rows).expect("a count")
    };
    let report = PurgeReport {
        purged,
        progress,
        sent_left: left_ending("-sent"),
        unsent_left: left_ending("-unsent"),
    };
    let outcomes = {
        let mut worker = inbox.open(&fixture);
        deliver_all(worker.as_mut(), handler.as_ref(), &inside)
    };
    let play = Play {
        scenario: format!("purge at the window's edge with the {}", purger.name()),
        consumer: consumer.to_owned(),
        deliveries: count as u64,
        steps: vec![(AFTER_PURGE.to_owned(), after_purge)],
        observed: observe(&fixture, subject, outcomes),
        messages: inside,
    };
    (play, report)
}

/// Judged: exactly the rows inside the window survive the purge, it
/// reports exactly what it deleted, and the redeliveries inside the window
/// are duplicates that change nothing.
pub fn purge_edge<S: Subject>(
    subject: &S,
    purger: &dyn Purger<S::Project>,
    count: usize,
) -> Result<PlayOf<S>, Violation> {
    let (play, report) = play_purge_edge(subject, purger, count);
    let purged = play.step(AFTER_PURGE);
    let mut problems = Vec::new();
    let deleted = Purged {
        inbox_rows: count as u64,
        attempt_rows: count as u64,
        sent_notifications: count as u64,
    };
    if report.purged != deleted {
        problems.push(format!(
            "the purge reported {:?}, it deleted {deleted:?}",
            report.purged
        ));
    }
    let total = deleted.inbox_rows + deleted.attempt_rows + deleted.sent_notifications;
    let progress = &report.progress;
    if !progress.is_sorted() || progress.last() != Some(&total) {
        problems.push(format!(
            "its progress went {progress:?}: a running total must only grow, up to the {total} rows deleted"
        ));
    }
    let widest = std::iter::once(&0)
        .chain(progress)
        .zip(progress)
        .map(|(before, after)| after.saturating_sub(*before))
        .max()
        .unwrap_or(0);
    if widest > u64::from(KEYS_PER_TRANSACTION) {
        problems.push(format!(
            "one transaction deleted {widest} rows (progress {progress:?}) walking {KEYS_PER_TRANSACTION} keys at a time: a purge must delete window by window, or deliveries wait behind it"
        ));
    }
    if report.sent_left != count {
        problems.push(format!(
            "{} sent notifications left; the {count} sent a minute inside the window must stay and the {count} outside it must go",
            report.sent_left
        ));
    }
    if report.unsent_left != 2 * count {
        problems.push(format!(
            "{} notifications not sent yet left of {}: a purge never deletes one the relay has not sent, however old",
            report.unsent_left,
            2 * count
        ));
    }
    if purged.inbox_rows != count {
        problems.push(format!(
            "{} inbox rows left; the {count} rows a minute inside the window must stay and the {count} a minute outside it must go",
            purged.inbox_rows
        ));
    }
    if purged.attempts != count as u64 {
        problems.push(format!(
            "{} failed attempts left; the {count} a minute inside the window must stay (a message failing again must still reach its dead letter) and the {count} outside must go",
            purged.attempts
        ));
    }
    if purged.dead_letters.len() != 2 * count {
        problems.push(format!(
            "{} dead letters left of {}: a purge never deletes a dead letter, however old",
            purged.dead_letters.len(),
            2 * count
        ));
    }
    if !problems.is_empty() {
        return Err(play.violation(&format!("{AFTER_PURGE}: {}", problems.join("; "))));
    }
    let seeded = Expected::of(subject, &[])?;
    let mut problems = seeded.problems(&play.observed.state, &play.observed.refused());
    if play.observed.outcomes.duplicate != count as u64 {
        problems.push(format!(
            "redeliveries inside the window gave {}, all {count} must be duplicates",
            play.observed.outcomes
        ));
    }
    if problems.is_empty() {
        return Ok(play);
    }
    Err(play.violation(&problems.join("; ")))
}
