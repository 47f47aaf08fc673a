//! An idempotent message consumer built on a transactional inbox.
//!
//! Start reading at [`inbox`]: it explains the one rule everything else
//! follows. Then:
//!
//! * [`message`] and [`event`]: what arrives, and why ids are never minted here;
//! * [`envelope`]: the JSON-lines wire format and every way a line is rejected;
//! * [`handler`] and [`handlers`]: the business code, one consumer per handler;
//! * [`database`]: the SQLite file, its settings and lock waiting;
//! * [`pipeline`]: reading deliveries and fanning them out to workers;
//! * [`retention`]: purging old inbox rows without letting late duplicates through.

pub mod database;
pub mod defaults;
pub mod envelope;
pub mod event;
pub mod handler;
pub mod handlers;
pub mod inbox;
pub mod message;
pub mod pipeline;
pub mod retention;
