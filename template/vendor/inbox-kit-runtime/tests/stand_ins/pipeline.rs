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
}

impl<R: Registry> Meter<R> for Counting {
    fn batch_began(&self) {
        self.began.fetch_add(1, Ordering::SeqCst);
    }
    fn batch_ended(&self, deliveries: &[Delivery<'_, R>], how: BatchEnd<'_>, _: Duration) {
        let BatchEnd::Committed(outcomes) = how else {
            panic!("no batch rolls back here");
        };
        assert_eq!(outcomes.len(), deliveries.len());
        self.committed
            .fetch_add(outcomes.len() as u64, Ordering::SeqCst);
        let applied = outcomes.iter().filter(|o| **o == Outcome::Applied).count();
        self.applied.fetch_add(applied as u64, Ordering::SeqCst);
    }
}

pub fn the_pipeline_settles_each_message_after_its_commit<D: Database>(db: &D)
where
    D::Inbox: 'static,
{
    const MAX_ATTEMPTS: u32 = 3;
    const WORKERS: usize = 4;
    // 40 that apply; a copy of the first (equal amounts share a worker,
    // so it comes after the original); one refused; one failing at its
    // first attempt; one failing at its last.
    let mut messages: Vec<(String, i64, u32)> =
        (1..=40).map(|n| (format!("m-{n}"), 100 + n, 1)).collect();
    messages.push(("m-1".into(), 101, 2));
    messages.push(("refused".into(), 0, 1));
    messages.push(("failing".into(), -5, 1));
    messages.push(("last-attempt".into(), -6, MAX_ATTEMPTS));

    let settled = Settled::default();
    let source = Scripted {
        messages,
        claims: db.claims(),
        settled: settled.clone(),
    };
    let inboxes = Mutex::new(
        (0..WORKERS)
            .map(|_| db.inbox(MAX_ATTEMPTS))
            .collect::<Vec<_>>(),
    );
    let meter = Arc::new(Counting::default());
    let options = Options::<D::Stands> {
        workers: WORKERS,
        batch_size: 8,
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

    let settled = settled.lock().unwrap();
    assert_eq!(settled.len(), 43, "every message settled: {settled:?}");
    for (id, verdicts) in settled.iter() {
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

    let metered = |count: &AtomicU64| count.load(Ordering::SeqCst);
    assert_eq!(metered(&meter.committed), 44, "every delivery metered once");
    assert_eq!(metered(&meter.applied), 40);
    assert!(metered(&meter.began) >= 44 / 8, "{meter:?}");
}
