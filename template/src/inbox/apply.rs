//! Running a handler inside a delivery, the same way on every database.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{Delivery, StorageError};
use crate::handlers::Tables;

/// Runs the delivery's handler on `tables`.
///
/// * `Ok(Ok(()))`: it applied.
/// * `Ok(Err(reason))`: the delivery failed (the handler returned an error
///   or panicked); the caller rolls back its savepoint and counts the
///   attempt against the message.
/// * `Err(fault)`: the database itself failed (see
///   [`StorageError::is_storage_fault`]); not the message's fault, so the
///   whole batch is abandoned and nothing counts.
///
/// A panic is caught so that it fails only this delivery instead of taking
/// the worker, and the batch's other deliveries, down with it.
pub fn run_handler(
    delivery: &Delivery<'_>,
    tables: &mut dyn Tables,
) -> Result<Result<(), String>, StorageError> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        delivery.handler.apply(tables, delivery.message)
    }));
    match result {
        Ok(Ok(())) => Ok(Ok(())),
        Ok(Err(error)) => match error.downcast::<StorageError>() {
            Ok(storage) if storage.is_storage_fault() => Err(*storage),
            Ok(storage) => Ok(Err(storage.to_string())),
            Err(other) => Ok(Err(other.to_string())),
        },
        Err(panic) => Ok(Err(panic_message(panic))),
    }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    format!("handler panicked: {text}")
}
