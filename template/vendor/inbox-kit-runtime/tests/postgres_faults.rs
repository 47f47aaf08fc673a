//! PostgreSQL's SQLSTATEs sorted into faults, against a real server: the
//! server raises each code (`RAISE ... USING ERRCODE`), so every class the
//! sorting names is seen as the client receives it. The sorting decides
//! whether a failed delivery is counted against its message or the whole
//! batch is abandoned with nothing counted.
//!
//! Needs PostgreSQL at `DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); without one it fails, saying
//! so.

use inbox_kit_runtime::storage::{StorageError, StorageFault};
use tokio_postgres::{Client, NoTls};

async fn connect() -> Client {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (client, connection) = tokio_postgres::connect(&url, NoTls)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "these tests need PostgreSQL at DATABASE_URL ({url}): start one \
             (e.g. `pg_ctlcluster 15 main start`) or point DATABASE_URL at one ({error})"
            )
        });
    tokio::spawn(connection);
    client
}

/// The error the server reports for a statement that raises `code`.
async fn raised(client: &Client, code: &str) -> StorageError {
    let statement =
        format!("DO $$ BEGIN RAISE EXCEPTION 'raised on purpose' USING ERRCODE = '{code}'; END $$");
    let error = client
        .batch_execute(&statement)
        .await
        .expect_err("the statement raises");
    StorageError::from(error)
}

#[tokio::test]
async fn each_sqlstate_class_is_sorted_into_its_fault() {
    let client = connect().await;
    let expected = [
        ("40001", StorageFault::Conflict),    // serialization failure
        ("40P01", StorageFault::Conflict),    // deadlock detected
        ("08006", StorageFault::Unavailable), // connection failure
        ("53100", StorageFault::Unavailable), // disk full
        ("58030", StorageFault::Unavailable), // I/O error
        ("57014", StorageFault::Unavailable), // statement_timeout
        ("55P03", StorageFault::Unavailable), // lock_timeout
        ("57P01", StorageFault::Unavailable), // admin shutdown
        ("57P02", StorageFault::Unavailable), // crash shutdown
        ("57P03", StorageFault::Unavailable), // cannot connect now
        ("25006", StorageFault::Unavailable), // read-only transaction
        ("25P03", StorageFault::Unavailable), // idle in transaction timeout
        ("23505", StorageFault::Constraint),  // unique violation
        ("23514", StorageFault::Constraint),  // check violation
        ("40002", StorageFault::Other),       // integrity constraint violation in a transaction
        ("42P01", StorageFault::Other),       // undefined table
        ("22012", StorageFault::Other),       // division by zero
    ];
    for (code, fault) in expected {
        let error = raised(&client, code).await;
        assert_eq!(error.fault(), fault, "SQLSTATE {code}: {error}");
        assert_eq!(
            error.is_storage_fault(),
            matches!(fault, StorageFault::Unavailable | StorageFault::Conflict),
            "SQLSTATE {code}"
        );
    }
}

#[tokio::test]
async fn a_server_error_reads_as_its_message_and_sqlstate() {
    let client = connect().await;
    let error = raised(&client, "23505").await;
    assert_eq!(
        error.to_string(),
        "constraint violated: raised on purpose (23505)"
    );
}
