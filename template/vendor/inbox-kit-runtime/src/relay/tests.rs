//! The relay's loop on an outbox in memory and a scripted sink: what is
//! sent, in which order against the marking, and what is counted.

use std::collections::HashMap;
use std::sync::Mutex;

use super::*;
use crate::delivery::Delivery;
use crate::handler::Subscriber;
use crate::meter::BatchEnd;

/// A row: its key is its name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    name: &'static str,
    trace_parent: Option<String>,
}

impl Notice for Row {
    const TYPE: &'static str = "row";

    fn idempotency_key(&self) -> String {
        self.name.to_owned()
    }

    fn topic(&self) -> &str {
        "rows"
    }

    fn payload(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name })
    }

    fn trace_parent(&self) -> Option<&str> {
        self.trace_parent.as_deref()
    }

    fn trace_parent_mut(&mut self) -> &mut Option<String> {
        &mut self.trace_parent
    }
}

/// What happened, in order: `take`, `send <key>`, `settle <key>=<label>...`.
type Log = Mutex<Vec<String>>;

/// An outbox in memory: rows due with their failures so far; settling
/// removes what was confirmed and keeps the rest due.
struct Outbox<'a> {
    due: Vec<(&'static str, u32)>,
    log: &'a Log,
}

impl Queue<Row> for Outbox<'_> {
    fn take(&mut self, limit: usize) -> Result<Vec<Outgoing<Row>>, StorageError> {
        self.log.lock().unwrap().push("take".to_owned());
        Ok(self
            .due
            .iter()
            .take(limit)
            .map(|&(name, failures)| Outgoing {
                key: name.to_owned(),
                notification: Row {
                    name,
                    trace_parent: None,
                },
                failures,
            })
            .collect())
    }

    fn settle(
        &mut self,
        sent: &[(Outgoing<Row>, Sent)],
        policy: RelayPolicy,
    ) -> Result<(), StorageError> {
        let labels: Vec<String> = sent
            .iter()
            .map(|(outgoing, sent)| format!("{}={}", outgoing.key, sent.label()))
            .collect();
        self.log
            .lock()
            .unwrap()
            .push(format!("settle {}", labels.join(" ")));
        for (outgoing, sent) in sent {
            let at = self.due.iter().position(|(name, _)| *name == outgoing.key);
            let at = at.expect("a row taken is due");
            match sent {
                Sent::Failed(_) if !policy.parks(outgoing.failures + 1) => self.due[at].1 += 1,
                _ => {
                    self.due.remove(at);
                }
            }
        }
        Ok(())
    }

    fn remaining(&mut self) -> Result<u64, StorageError> {
        Ok(self.due.len() as u64)
    }

    fn parked(&mut self) -> Result<Vec<Parked>, StorageError> {
        Ok(Vec::new())
    }

    fn requeue(&mut self, _: &[String]) -> Result<u64, StorageError> {
        Ok(0)
    }
}

/// A receiver that answers each key as scripted (confirmed otherwise).
struct Receiver<'a> {
    answers: HashMap<&'static str, Sent>,
    log: &'a Log,
}

impl Sink<Row> for Receiver<'_> {
    fn send(&mut self, outgoing: &Outgoing<Row>) -> Sent {
        self.log
            .lock()
            .unwrap()
            .push(format!("send {}", outgoing.key));
        self.answers
            .get(outgoing.key.as_str())
            .cloned()
            .unwrap_or(Sent::Confirmed)
    }
}

fn outbox<'a>(log: &'a Log, due: &[(&'static str, u32)]) -> Outbox<'a> {
    Outbox {
        due: due.to_vec(),
        log,
    }
}

fn receiver<'a>(log: &'a Log, answers: &[(&'static str, Sent)]) -> Receiver<'a> {
    Receiver {
        answers: answers.iter().cloned().collect(),
        log,
    }
}

fn batch(queue: &mut Outbox<'_>, sink: &mut Receiver<'_>) -> Result<RelayCounts, RelayError> {
    relay_batch(
        queue,
        sink,
        10,
        RelayPolicy::default(),
        &Progress::default(),
    )
}

fn log_of(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[test]
fn every_row_is_sent_before_any_is_marked() {
    let log = Log::default();
    let counts = batch(
        &mut outbox(&log, &[("a", 0), ("b", 0), ("c", 0)]),
        &mut receiver(&log, &[]),
    )
    .unwrap();
    assert_eq!(
        log_of(&log),
        [
            "take",
            "send a",
            "send b",
            "send c",
            "settle a=sent b=sent c=sent"
        ]
    );
    assert_eq!(
        counts,
        RelayCounts {
            sent: 3,
            ..RelayCounts::default()
        }
    );
}

#[test]
fn a_failure_is_counted_and_parks_the_row_at_the_last_attempt() {
    let log = Log::default();
    let failed = Sent::Failed("down".to_owned());
    let last = RelayPolicy::default().max_attempts - 1;
    let counts = batch(
        &mut outbox(&log, &[("a", 0), ("b", last), ("c", 0)]),
        &mut receiver(
            &log,
            &[
                ("a", failed.clone()),
                ("b", failed),
                ("c", Sent::AlreadyThere),
            ],
        ),
    )
    .unwrap();
    assert_eq!(
        counts,
        RelayCounts {
            sent: 1,
            already_there: 1,
            failed: 1,
            parked: 1,
        }
    );
    assert_eq!(
        log_of(&log).last().unwrap(),
        "settle a=failed b=failed c=already_there"
    );
}

#[test]
fn a_closed_destination_ends_the_batch_marking_only_what_was_sent() {
    let log = Log::default();
    let closed = Sent::Closed("gone".to_owned());
    let ended = batch(
        &mut outbox(&log, &[("a", 0), ("b", 0), ("c", 0)]),
        &mut receiver(&log, &[("b", closed.clone())]),
    );
    assert!(matches!(ended, Err(RelayError::SinkClosed(reason)) if reason == "gone"));
    assert_eq!(log_of(&log), ["take", "send a", "send b", "settle a=sent"]);

    // Closed at the first send: the taking transaction still ends, with
    // nothing marked.
    let log = Log::default();
    let ended = batch(
        &mut outbox(&log, &[("a", 0)]),
        &mut receiver(&log, &[("a", closed)]),
    );
    assert!(ended.is_err());
    assert_eq!(log_of(&log), ["take", "send a", "settle "]);
}

#[test]
fn nothing_due_sends_and_settles_nothing() {
    let log = Log::default();
    let counts = batch(&mut outbox(&log, &[]), &mut receiver(&log, &[])).unwrap();
    assert_eq!(counts, RelayCounts::default());
    assert_eq!(log_of(&log), ["take"]);
}

#[test]
fn the_policy_parks_at_its_attempts_and_waits_twice_as_long_each_time_up_to_a_minute() {
    let policy = RelayPolicy {
        max_attempts: 3,
        retry_after: Duration::from_secs(1),
    };
    assert!(!policy.parks(2));
    assert!(policy.parks(3));
    assert!(policy.parks(4));
    let waits: Vec<i64> = [1, 2, 3, 4, 6, 7, 30]
        .into_iter()
        .map(|failures| policy.retry_at(1_000, failures) - 1_000)
        .collect();
    assert_eq!(waits, [1_000, 2_000, 4_000, 8_000, 32_000, 60_000, 60_000]);
}

/// Consumers known by name alone, for a meter.
struct Named;

impl crate::handler::Registry for Named {
    type Event = ();
    type Handler<'a> = dyn Subscriber<()> + 'a;
    fn has_set_based(_: &Self::Handler<'_>) -> bool {
        false
    }
    fn encode(_: &()) -> (&'static str, String) {
        ("nothing", String::new())
    }
    fn partition_key(_: &()) -> u64 {
        0
    }
    fn lend<'a>(handler: &'a Self::Handler<'static>) -> &'a Self::Handler<'a> {
        handler
    }
}

/// A meter that keeps every batch's relay counts.
#[derive(Debug, Default)]
struct Batches(Mutex<Vec<RelayCounts>>);

impl Meter<Named> for Batches {
    fn batch_ended(&self, _: &[Delivery<'_, Named>], _: BatchEnd<'_>, _: Duration) {}

    fn relayed(&self, counts: &RelayCounts) {
        self.0.lock().unwrap().push(*counts);
    }
}

#[test]
fn until_done_the_loop_sends_batch_after_batch_and_adds_them_up() {
    let log = Log::default();
    let meter = Batches::default();
    let (stop, progress) = (Stop::default(), Progress::default());
    let mut queue = outbox(&log, &[("a", 0), ("b", 0), ("c", 0), ("d", 0), ("e", 0)]);
    let mut sink = receiver(&log, &[("d", Sent::AlreadyThere)]);
    let watch = Watch {
        until: Until::Done,
        stop: &stop,
        progress: &progress,
        meter: &meter,
    };
    let total = relay(&mut queue, &mut sink, 2, RelayPolicy::default(), watch).unwrap();
    assert_eq!(
        total,
        RelayCounts {
            sent: 5,
            already_there: 1,
            ..RelayCounts::default()
        }
    );
    let batches = meter.0.lock().unwrap().clone();
    let sent: Vec<u64> = batches.iter().map(|counts| counts.sent).collect();
    assert_eq!(sent, [2, 2, 1, 0], "each batch told once, the idle one too");
    assert_eq!(queue.remaining().unwrap(), 0);
}

#[test]
fn until_done_the_loop_adds_up_failures_and_parked_rows_too() {
    let log = Log::default();
    let meter = Batches::default();
    let (stop, progress) = (Stop::default(), Progress::default());
    let policy = RelayPolicy {
        max_attempts: 2,
        retry_after: Duration::ZERO,
    };
    let mut queue = outbox(&log, &[("a", 0), ("b", 0)]);
    let mut sink = receiver(&log, &[("a", Sent::Failed("down".to_owned()))]);
    let watch = Watch {
        until: Until::Done,
        stop: &stop,
        progress: &progress,
        meter: &meter,
    };
    // a fails, b is sent; then a fails again and is parked; then nothing.
    let total = relay(&mut queue, &mut sink, 10, policy, watch).unwrap();
    assert_eq!(
        total,
        RelayCounts {
            sent: 1,
            already_there: 0,
            failed: 1,
            parked: 1,
        }
    );
    assert_eq!(meter.0.lock().unwrap().len(), 3);
}

#[test]
fn a_raised_stop_sends_nothing_more() {
    let log = Log::default();
    let (stop, progress) = (Stop::default(), Progress::default());
    stop.raise();
    let watch = Watch {
        until: Until::Done,
        stop: &stop,
        progress: &progress,
        meter: &Batches::default(),
    };
    let total = relay(
        &mut outbox(&log, &[("a", 0)]),
        &mut receiver(&log, &[]),
        2,
        RelayPolicy::default(),
        watch,
    )
    .unwrap();
    assert_eq!(total, RelayCounts::default());
    assert!(log_of(&log).is_empty());
}
