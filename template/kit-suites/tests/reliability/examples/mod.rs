//! The example consumers' own tests, one promise each, with explicit
//! expected values (balances, row counts, outcomes): the kit's checks of
//! its runtime and test kit through `debit`, `notify` and `refund`. Every
//! project runs the required tests (`tests/conformance/required.rs`: each
//! scenario for every subject, judged against the subject's model); these
//! check the same promises, and those no model states (the pipeline's
//! settling, fan-out to both consumers, retention's windows, a failing
//! statement in a batch), by number. A generated project does not carry
//! them.
//!
//! * `run_twice`: the same messages delivered twice apply once;
//! * `parallel`: four workers delivering the same messages at once apply
//!   each once, and none fails on a lock;
//! * `pipeline`: through the real pipeline, each message is settled only
//!   after its commit, and routed by partition key;
//! * `redeliver`: a delivery that fails leaves no trace, and its
//!   redelivery applies it once;
//! * `restart`: duplicates are still caught by a new process;
//! * `consumers`: two consumers of one message both apply it, and one event
//!   fans out to every channel;
//! * `business_key`: each handler's own tables refuse a repeat that gets
//!   past the inbox, and allow the legitimate fan-out;
//! * `ids`: ids are compared exactly (case, whitespace, Unicode, length);
//! * `commit`: a COMMIT that fails reports nothing as applied;
//! * `dead_letters`: a message that always fails is parked, stays a
//!   duplicate, and is redriven once;
//! * `database_faults`: a storage fault in a handler's write, or a claim
//!   that times out behind another transaction, is never the message's;
//! * `retention`: a purge keeps every row inside its window;
//! * `rules`: different messages about one entity, delivered at once from
//!   two processes, end as some serial order of them would;
//! * `statements`: a handler's statement that fails inside a batch rolls
//!   back its own delivery only.

mod business_key;
mod commit;
mod consumers;
mod database_faults;
mod dead_letters;
mod ids;
mod parallel;
mod pipeline;
mod redeliver;
mod restart;
mod retention;
mod rules;
mod run_twice;
mod statements;
