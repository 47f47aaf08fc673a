//! PostgreSQL's SQLSTATE codes, sorted into the inbox's [`StorageFault`]s.
//!
//! Decided from the code, never from the message text, which changes with
//! the server's language and version.

use tokio_postgres::error::SqlState;

use super::{StorageError, StorageFault};

impl From<tokio_postgres::Error> for StorageError {
    fn from(error: tokio_postgres::Error) -> Self {
        StorageError::new(fault(&error), describe(&error))
    }
}

/// The server's own message for an error it reported (with its SQLSTATE),
/// or the client's description and its causes. A connection string never
/// gets here: `Database::connect` parses it first and reports a bad one
/// without repeating it.
fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

fn fault(error: &tokio_postgres::Error) -> StorageFault {
    let Some(code) = error.code() else {
        // No SQLSTATE: the connection broke, or never opened.
        return StorageFault::Unavailable;
    };
    if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED {
        return StorageFault::Conflict;
    }
    let unavailable = [
        SqlState::QUERY_CANCELED,     // statement_timeout
        SqlState::LOCK_NOT_AVAILABLE, // lock_timeout
        SqlState::ADMIN_SHUTDOWN,     // pg_terminate_backend, server stopping
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
        SqlState::READ_ONLY_SQL_TRANSACTION, // a standby, or a read-only session
        SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
    ];
    let class = &code.code()[..2];
    match class {
        // connection exception, insufficient resources (disk full, out of
        // memory, too many connections), system error
        "08" | "53" | "58" => StorageFault::Unavailable,
        "23" => StorageFault::Constraint,
        _ if unavailable.contains(code) => StorageFault::Unavailable,
        _ => StorageFault::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No server listens on port 1: the connection never opens, there is
    /// no SQLSTATE, and the database (not the message) is to blame.
    #[tokio::test]
    async fn a_connection_that_never_opened_is_unavailable() {
        let error = tokio_postgres::connect(
            "host=127.0.0.1 port=1 connect_timeout=5",
            tokio_postgres::NoTls,
        )
        .await
        .err()
        .expect("nothing listens on port 1");
        let storage = StorageError::from(error);
        assert_eq!(storage.fault(), StorageFault::Unavailable);
        assert!(storage.is_storage_fault());
        assert!(
            storage.to_string().starts_with("database unavailable: "),
            "{storage}"
        );
    }
}
