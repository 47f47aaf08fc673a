//! Storage errors, described the same way whatever the database.
//!
//! The inbox must tell two kinds of error apart. When the *database* fails
//! (full disk, lost connection, a timeout, two transactions in a deadlock)
//! the message is not to blame: the batch is abandoned, nothing in it is
//! acknowledged, no attempt is counted, and a redelivery tries again. When a
//! *write* is refused (a unique key catching a repeat, a check constraint),
//! the delivery failed and counts towards its dead letter. Each database
//! module classifies its own error codes into a [`StorageFault`]; nothing
//! here ever looks at an error's text. Each database's classification is
//! a feature of this crate: [`sqlite`] and [`postgres`].

use std::fmt;

#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

/// What kind of trouble the database reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageFault {
    /// The database cannot do its work right now: full, read-only,
    /// unreachable, the connection was lost, a lock or statement timeout.
    Unavailable,
    /// The transaction lost a race with another one (serialization failure,
    /// deadlock). Retrying the transaction is the cure.
    Conflict,
    /// A constraint refused a write: a unique key caught a repeat, a check
    /// failed.
    Constraint,
    /// Anything else the database reported.
    Other,
}

impl fmt::Display for StorageFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unavailable => "database unavailable",
            Self::Conflict => "transaction conflict",
            Self::Constraint => "constraint violated",
            Self::Other => "database error",
        })
    }
}

/// An error from the database, classified.
#[derive(Debug, thiserror::Error)]
#[error("{fault}: {message}")]
pub struct StorageError {
    fault: StorageFault,
    message: String,
}

impl StorageError {
    pub fn new(fault: StorageFault, message: impl Into<String>) -> Self {
        Self {
            fault,
            message: message.into(),
        }
    }

    pub fn fault(&self) -> StorageFault {
        self.fault
    }

    /// Whether the database, not the message, is to blame: the batch must be
    /// abandoned instead of counting a failed attempt against the message.
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self.fault,
            StorageFault::Unavailable | StorageFault::Conflict
        )
    }
}

#[cfg(test)]
mod tests {
    use super::StorageFault;

    #[test]
    fn each_fault_reads_as_what_it_is() {
        let texts = [
            StorageFault::Unavailable,
            StorageFault::Conflict,
            StorageFault::Constraint,
            StorageFault::Other,
        ]
        .map(|fault| fault.to_string());
        assert_eq!(
            texts,
            [
                "database unavailable",
                "transaction conflict",
                "constraint violated",
                "database error"
            ]
        );
    }
}
