//! What every handler shares, whatever its events: the error it returns,
//! its final "no" to a message, and the rules for a consumer's name (the
//! first half of the inbox key).

/// Any error a handler wants to report. Returning one rolls the whole
/// delivery back, inbox record included, so a redelivery tries again
/// (up to the policy's attempts), unless it is a [`Refused`].
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A handler's final "no": the message breaks a rule (a refund above what
/// was paid) or names something that does not exist and never will (a
/// refund of a payment never captured). It would fail the same way on
/// every delivery, so it is not retried: its writes are rolled back, it is
/// dead-lettered at once with this reason, and its redeliveries are
/// duplicates. Return it as `Err(Refused::because("...").into())`.
///
/// A failure that may heal (an account not opened yet, a service that is
/// down) is an ordinary error instead: retried, then dead-lettered. A
/// database fault (a lock timeout, a lost connection) is neither: it is
/// never held against the message (see [`crate::storage::StorageError`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Refused {
    pub fn because(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

/// Consumer names: 1 to 64 characters from `a-z`, `0-9`, `_`, `-`, `.`,
/// starting with a letter. They end up in logs and in the inbox key, so
/// they are kept boring.
pub fn is_valid_consumer_name(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_with_letter = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    starts_with_letter
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_names_are_boring() {
        for good in ["debit", "notify", "ledger-v2", "a.b_c"] {
            assert!(is_valid_consumer_name(good), "{good}");
        }
        let too_long = "a".repeat(65);
        for bad in [
            "",
            "Debit",
            "9lives",
            "has space",
            "semi;colon",
            too_long.as_str(),
        ] {
            assert!(!is_valid_consumer_name(bad), "{bad}");
        }
    }
}
