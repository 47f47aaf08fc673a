//! SQLite's result codes, sorted into the inbox's [`StorageFault`]s.
//!
//! Decided from the (extended) result code, never from the message text,
//! which is not a stable interface.

use rusqlite::{ErrorCode, ffi};

use super::{StorageError, StorageFault};

impl From<rusqlite::Error> for StorageError {
    fn from(error: rusqlite::Error) -> Self {
        StorageError::new(fault(&error), error.to_string())
    }
}

fn fault(error: &rusqlite::Error) -> StorageFault {
    let Some(failure) = error.sqlite_error() else {
        return StorageFault::Other;
    };
    match failure.code {
        ErrorCode::DiskFull
        | ErrorCode::ReadOnly
        | ErrorCode::DatabaseBusy
        | ErrorCode::DatabaseLocked
        | ErrorCode::SystemIoFailure
        | ErrorCode::OutOfMemory
        | ErrorCode::CannotOpen
        | ErrorCode::DatabaseCorrupt
        | ErrorCode::NotADatabase => StorageFault::Unavailable,
        ErrorCode::ConstraintViolation => StorageFault::Constraint,
        _ => StorageFault::Other,
    }
}

/// Whether `error` is the inbox's primary key refusing a second row for the
/// same (consumer, message id): the extended result code
/// `SQLITE_CONSTRAINT_PRIMARYKEY`, and only that one (a unique key of a
/// handler's table, or a failed check, is not a duplicate of the message).
pub fn is_duplicate_key(error: &rusqlite::Error) -> bool {
    error.sqlite_extended_error_code() == Some(ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_codes_into_faults() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER CHECK (n > 0)); INSERT INTO t VALUES ('a', 1);")
            .unwrap();
        let duplicate = db.execute("INSERT INTO t VALUES ('a', 1)", []).unwrap_err();
        assert!(is_duplicate_key(&duplicate));
        assert_eq!(
            StorageError::from(duplicate).fault(),
            StorageFault::Constraint
        );

        let check = db.execute("INSERT INTO t VALUES ('b', 0)", []).unwrap_err();
        assert!(
            !is_duplicate_key(&check),
            "a failed check is not a duplicate"
        );

        db.pragma_update(None, "query_only", "ON").unwrap();
        let read_only =
            StorageError::from(db.execute("INSERT INTO t VALUES ('c', 1)", []).unwrap_err());
        assert_eq!(read_only.fault(), StorageFault::Unavailable);
        assert!(read_only.is_storage_fault());

        let missing = StorageError::from(db.execute("SELECT * FROM nowhere", []).unwrap_err());
        assert_eq!(missing.fault(), StorageFault::Other);
        assert!(!missing.is_storage_fault());
    }
}
