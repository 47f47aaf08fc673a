//! Running a handler inside a delivery: on this project's tables, through
//! the runtime's [`guarded`], which catches a panic and sorts the result
//! into applied, failed, refused or a database fault.

use inbox_kit_runtime::inbox::{Failure, guarded};

use crate::event::Event;
use crate::handler::SetBased;
use crate::handlers::Tables;
use crate::inbox::{Delivery, StorageError};
use crate::message::Message;

/// Runs the delivery's handler on `tables` (see [`guarded`] for what each
/// result means).
pub(super) fn run_handler(
    delivery: &Delivery<'_>,
    tables: &mut dyn Tables,
) -> Result<Result<(), Failure>, StorageError> {
    guarded(|| delivery.handler.apply(tables, delivery.message))
}

/// Runs a handler's set-based path on `messages`, with the same verdicts
/// as [`run_handler`]: `Ok(Err(_))` means "roll it back and apply them one
/// at a time", `Err(fault)` abandons the whole batch.
pub(super) fn run_set_based<'t>(
    set_based: &dyn SetBased<Event, dyn Tables + 't>,
    messages: &[&Message],
    tables: &mut (dyn Tables + 't),
) -> Result<Result<(), Failure>, StorageError> {
    guarded(|| set_based.apply_all(tables, messages))
}
