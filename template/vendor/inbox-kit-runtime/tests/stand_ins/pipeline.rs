//! The pipeline on each database's inbox: a source's messages routed to
//! four workers, each message settled once, after the commit that holds
//! its deliveries, with the verdict its outcomes call for, and every
//! delivery counted by the summary and the meter alike.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::Sender;
use inbox_kit_runtime::delivery::Delivery;
use inbox_kit_runtime::handler::Registry;
use inbox_kit_runtime::inbox::Outcome;
use inbox_kit_runtime::meter::{BatchEnd, Meter};
use inbox_kit_runtime::pipeline::{self, Options, Summary};
use inbox_kit_runtime::source::{Acknowledge, Incoming, Source, Stop, Verdict};
use inbox_kit_runtime::stop;

use super::{Database, message, sum};

/// What each message's settling saw: its verdict, and how many inbox rows
/// another connection found for it at that moment.
type Settled = Arc<Mutex<BTreeMap<String, Vec<(Verdict, i64)>>>>;

struct Recorder {
    id: String,
    claims: Arc<dyn Fn(&str) -> i64 + Send + Sync>,
    settled: Settled,
}

impl Acknowledge for Recorder {
    fn settle(self: Box<Self>, verdict: Verdict) {
        let claims = (self.claims)(&self.id);
        let mut settled = self.settled.lock().unwrap();
        settled.entry(self.id).or_default().push((verdict, claims));
    }
}

/// The messages, in chunks of three, then a count of rejected inputs.
struct Scripted {
    messages: Vec<(String, i64, u32)>,
    claims: Arc<dyn Fn(&str) -> i64 + Send + Sync>,
    settled: Settled,
}

const REJECTED: u64 = 2;

impl Source<i64> for Scripted {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming<i64>>>, _: &Stop) -> anyhow::Result<u64> {
        let incoming: Vec<Incoming<i64>> = self
            .messages
            .iter()
            .map(|(id, amount, delivered)| Incoming {
                message: message(id, *amount),
                delivered: *delivered,
                ack: Box::new(Recorder {
                    id: id.clone(),
                    claims: self.claims.clone(),
                    settled: self.settled.clone(),
                }),
            })
            .collect();
        let mut incoming = incoming.into_iter().peekable();
        while incoming.peek().is_some() {
            if chunks.send(incoming.by_ref().take(3).collect()).is_err() {
                anyhow::bail!("the pipeline stopped taking chunks");
            }
        }
        Ok(REJECTED)
    }
}

/// Counts what the pipeline shows a meter.
#[derive(Debug, Default)]
struct Counting {
    began: AtomicU64,
    committed: AtomicU64,
    applied: AtomicU64,
    rolled_back: AtomicU64,
    largest_batch: AtomicU64,
}

impl<R: Registry> Meter<R> for Counting {
    fn batch_began(&self) {
        self.began.fetch_add(1, Ordering::SeqCst);
    }
    fn batch_ended(&self, deliveries: &[Delivery<'_, R>], how: BatchEnd<'_>, _: Duration) {
        self.largest_batch
            .fetch_max(deliveries.len() as u64, Ordering::SeqCst);
        let BatchEnd::Committed(outcomes) = how else {
            self.rolled_back
                .fetch_add(deliveries.len() as u64, Ordering::SeqCst);
            return;
        };
        assert_eq!(outcomes.len(), deliveries.len());
        self.committed
            .fetch_add(outcomes.len() as u64, Ordering::SeqCst);
        let applied = outcomes.iter().filter(|o| **o == Outcome::Applied).count();
        self.applied.fetch_add(applied as u64, Ordering::SeqCst);
    }
}

const MAX_ATTEMPTS: u32 = 3;
const BATCH_SIZE: usize = 8;

/// How one run went: its report, what each message's settling saw, and
/// what its meter counted.
struct Played {
    report: pipeline::Report,
    settled: BTreeMap<String, Vec<(Verdict, i64)>>,
    meter: Arc<Counting>,
}

/// Runs `messages` (id, amount, times delivered) through the pipeline to
/// the credit stand-in, on `workers` inboxes of `db`.
fn play<D: Database>(db: &D, messages: Vec<(String, i64, u32)>, workers: usize) -> Played
where
    D::Inbox: 'static,
{
    let settled = Settled::default();
    let source = Scripted {
        messages,
        claims: db.claims(),
        settled: settled.clone(),
    };
    let inboxes = Mutex::new(
        (0..workers)
            .map(|_| db.inbox(MAX_ATTEMPTS))
            .collect::<Vec<_>>(),
    );
    let meter = Arc::new(Counting::default());
    let options = Options::<D::Stands> {
        workers,
        batch_size: BATCH_SIZE,
        meter: meter.clone(),
        ..Options::default()
    };
    let report = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(pipeline::run_until(
            Box::new(source),
            vec![D::credit_held()],
            move || Ok(inboxes.lock().unwrap().pop().expect("an inbox per worker")),
            options,
            Arc::new(stop::Stop::default()),
        ))
        .expect("the run");
    let settled = std::mem::take(&mut *settled.lock().unwrap());
    Played {
        report,
        settled,
        meter,
    }
}

fn metered(count: &AtomicU64) -> u64 {
    count.load(Ordering::SeqCst)
}

/// 4 workers: 40 messages that apply; a copy of the first (equal amounts
/// share a worker, so it comes after the original); one refused; one
/// failing at its first attempt; one failing at its last.
pub fn the_pipeline_settles_each_message_after_its_commit<D: Database>(db: &D)
where
    D::Inbox: 'static,
{
    let mut messages: Vec<(String, i64, u32)> =
        (1..=40).map(|n| (format!("m-{n}"), 100 + n, 1)).collect();
    messages.push(("m-1".into(), 101, 2));
    messages.push(("refused".into(), 0, 1));
    messages.push(("failing".into(), -5, 1));
    messages.push(("last-attempt".into(), -6, MAX_ATTEMPTS));
    let Played {
        report,
        settled,
        meter,
    } = play(db, messages, 4);

    assert_eq!(
        report.summary,
        Summary {
            applied: 40,
            duplicate: 1,
            failed: 1,
            rejected: REJECTED,
            dead_lettered: 1,
            refused: 1,
        }
    );
    assert!(!report.interrupted);
    assert_eq!(sum(db), (1..=40).map(|n| 100 + n).sum::<i64>());

    assert_eq!(settled.len(), 43, "every message settled: {settled:?}");
    for (id, verdicts) in &settled {
        let expected = match id.as_str() {
            "m-1" => vec![(Verdict::Done, 1), (Verdict::Done, 1)],
            "refused" | "last-attempt" => vec![(Verdict::Parked, 1)],
            // Rolled back: no inbox row, and it must come again.
            "failing" => vec![(Verdict::Retry, 0)],
            // Its inbox row already committed when it was settled.
            _ => vec![(Verdict::Done, 1)],
        };
        assert_eq!(verdicts, &expected, "{id}");
    }

    assert_eq!(metered(&meter.committed), 44, "every delivery metered once");
    assert_eq!(metered(&meter.applied), 40);
    assert_eq!(metered(&meter.rolled_back), 0);
    assert!(metered(&meter.began) >= 44 / BATCH_SIZE as u64, "{meter:?}");
    assert!(
        metered(&meter.largest_batch) <= BATCH_SIZE as u64,
        "a batch above its size: {meter:?}"
    );
}

/// A batch the database does not commit (its claim refused): nothing is
/// held against its messages, which are left to the source (`Abandoned`),
/// counted as failed, and shown to the meter as rolled back; they apply
/// once the database takes them.
pub fn a_batch_the_database_rolls_back_is_abandoned<D: Database>(db: &D)
where
    D::Inbox: 'static,
{
    let messages = || vec![("m-x".to_owned(), 5, 1), ("m-y".to_owned(), 5, 1)];
    db.refuse_claims_of(Some("m-y"));
    let abandoned = play(db, messages(), 1);
    assert_eq!(
        abandoned.report.summary,
        Summary {
            failed: 2,
            rejected: REJECTED,
            ..Summary::default()
        }
    );
    for id in ["m-x", "m-y"] {
        assert_eq!(abandoned.settled[id], [(Verdict::Abandoned, 0)], "{id}");
    }
    assert_eq!(metered(&abandoned.meter.rolled_back), 2);
    assert_eq!(metered(&abandoned.meter.committed), 0);
    assert_eq!(sum(db), 0);

    db.refuse_claims_of(None);
    let taken = play(db, messages(), 1);
    assert_eq!(taken.report.summary.applied, 2);
    assert_eq!(sum(db), 10);
}
