//! Mistakes around the pipeline: settling too early, routing by anything
//! but the partition key.

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::Sender;

use inbox_kit_runtime::message::Message;
use inbox_kit_runtime::pipeline::Route;
use inbox_kit_runtime::source::{Acknowledge, Incoming, Source, Stop, Verdict};

use crate::harness::scenarios::SourceUnderTest;

/// Acknowledges each message the moment it is received, before any
/// transaction: "we have it, the broker can forget it". A crash before the
/// commit loses the message for good. (The same as a pipeline that settles
/// before the batch commits.) Caught through the pipeline: when it is
/// settled, its inbox row is not there.
pub struct SettlesOnReceipt;

impl<E: Send + 'static> SourceUnderTest<E> for SettlesOnReceipt {
    fn name(&self) -> String {
        "a source that acknowledges on receipt".into()
    }
    fn wrap(&self, source: Box<dyn Source<E>>) -> Box<dyn Source<E>> {
        Box::new(OnReceipt(source))
    }
}

struct OnReceipt<E>(Box<dyn Source<E>>);

/// What the pipeline is given to settle instead: nothing.
struct AlreadySettled;

impl Acknowledge for AlreadySettled {
    fn settle(self: Box<Self>, _verdict: Verdict) {}
}

impl<E: Send> Source<E> for OnReceipt<E> {
    fn run(self: Box<Self>, chunks: &Sender<Vec<Incoming<E>>>, stop: &Stop) -> anyhow::Result<u64> {
        let (inner, received) = crossbeam_channel::bounded(4);
        std::thread::scope(|scope| {
            let reading = scope.spawn(move || self.0.run(&inner, stop));
            for chunk in received {
                let chunk: Vec<Incoming<E>> = chunk
                    .into_iter()
                    .map(|incoming| {
                        incoming.ack.settle(Verdict::Done);
                        Incoming {
                            ack: Box::new(AlreadySettled),
                            ..incoming
                        }
                    })
                    .collect();
                if chunks.send(chunk).is_err() {
                    break;
                }
            }
            reading.join().expect("the inner source")
        })
    }
}

/// Routes round robin, "to spread the load": the messages about one thing
/// land on several workers, which apply them at the same time and in any
/// order (a refund before the payment it refunds, two refunds of one
/// payment racing). Caught through the pipeline, which watches which
/// worker delivers what.
#[derive(Debug, Default)]
pub struct RoundRobin(AtomicUsize);

impl<E> Route<E> for RoundRobin {
    fn worker(&self, _message: &Message<E>, workers: usize) -> usize {
        self.0.fetch_add(1, Ordering::Relaxed) % workers.max(1)
    }
}
