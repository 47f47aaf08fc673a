//! Running a handler inside a delivery, the same way on every database.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{Delivery, StorageError};
use crate::handler::{HandlerError, Refused, SetBased};
use crate::handlers::Tables;
use crate::message::Message;

/// Why a handler did not apply a delivery, when the database is not to
/// blame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// It failed (an error, a panic): counted, and retried on redelivery.
    Failed(String),
    /// It refused the message for good ([`Refused`]): dead-lettered at once.
    Refused(String),
}

/// Runs the delivery's handler on `tables`.
///
/// * `Ok(Ok(()))`: it applied.
/// * `Ok(Err(failure))`: the delivery failed or was refused; the caller
///   rolls back its savepoint, then counts the attempt against the message
///   or dead-letters it.
/// * `Err(fault)`: the database itself failed (see
///   [`StorageError::is_storage_fault`]); not the message's fault, so the
///   whole batch is abandoned and nothing counts.
///
/// A panic is caught so that it fails only this delivery instead of taking
/// the worker, and the batch's other deliveries, down with it.
pub fn run_handler(
    delivery: &Delivery<'_>,
    tables: &mut dyn Tables,
) -> Result<Result<(), Failure>, StorageError> {
    settle(catch_unwind(AssertUnwindSafe(|| {
        delivery.handler.apply(tables, delivery.message)
    })))
}

/// Runs a handler's set-based path on `messages`, with the same verdicts
/// as [`run_handler`]: `Ok(Err(_))` means "roll it back and apply them one
/// at a time", `Err(fault)` abandons the whole batch.
pub fn run_set_based(
    set_based: &dyn SetBased,
    messages: &[&Message],
    tables: &mut dyn Tables,
) -> Result<Result<(), Failure>, StorageError> {
    settle(catch_unwind(AssertUnwindSafe(|| {
        set_based.apply_all(tables, messages)
    })))
}

/// What a handler's result (or panic) means for its delivery.
fn settle(
    result: std::thread::Result<Result<(), HandlerError>>,
) -> Result<Result<(), Failure>, StorageError> {
    let error = match result {
        Ok(Ok(())) => return Ok(Ok(())),
        Ok(Err(error)) => error,
        Err(panic) => return Ok(Err(Failure::Failed(panic_message(panic)))),
    };
    let error = match error.downcast::<StorageError>() {
        Ok(storage) if storage.is_storage_fault() => return Err(*storage),
        Ok(storage) => return Ok(Err(Failure::Failed(storage.to_string()))),
        Err(other) => other,
    };
    Ok(Err(match error.downcast::<Refused>() {
        Ok(refused) => Failure::Refused(refused.0),
        Err(other) => Failure::Failed(other.to_string()),
    }))
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("handler panicked: {text}")
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn a_panic_is_recorded_with_its_message_whatever_its_payload() {
        assert_eq!(panic_message(Box::new("boom")), "handler panicked: boom");
        assert_eq!(
            panic_message(Box::new(String::from("no account 7"))),
            "handler panicked: no account 7"
        );
        assert_eq!(
            panic_message(Box::new(42_u8)),
            "handler panicked: unknown panic"
        );
    }
}
