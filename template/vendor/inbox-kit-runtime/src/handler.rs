//! What every handler shares, whatever its events: the error it returns,
//! its final "no" to a message, and the rules for a consumer's name (the
//! first half of the inbox key), with which consumers may run together.

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

/// Whether consumers named `names` can run side by side: every name valid
/// and distinct. Two consumers with one name would share their inbox rows:
/// the second would take every message the first applied for a duplicate,
/// and never apply it.
pub fn check_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), BadConsumers> {
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !is_valid_consumer_name(name) {
            return Err(BadConsumers::InvalidName(name.to_owned()));
        }
        if !seen.insert(name) {
            return Err(BadConsumers::SameName(name.to_owned()));
        }
    }
    Ok(())
}

/// Picks consumers by name out of `known` (checked first with
/// [`check_names`]) and returns their places in it, in the order asked
/// for; asking for none means all of them.
pub fn pick(wanted: &[String], known: &[&str]) -> Result<Vec<usize>, BadConsumers> {
    check_names(known.iter().copied())?;
    if wanted.is_empty() {
        return Ok((0..known.len()).collect());
    }
    wanted
        .iter()
        .map(|name| {
            known.iter().position(|known| known == name).ok_or_else(|| {
                BadConsumers::from(UnknownConsumer {
                    name: name.clone(),
                    known: known.join(", "),
                })
            })
        })
        .collect()
}

/// Why a set of consumers cannot run together.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BadConsumers {
    #[error(
        "two consumers are named `{0}`: they would share their inbox rows, and the second would never apply what the first did"
    )]
    SameName(String),
    #[error(
        "consumer name `{0}` is not valid (1 to 64 of a-z, 0-9, _, -, ., starting with a letter)"
    )]
    InvalidName(String),
    #[error(transparent)]
    Unknown(#[from] UnknownConsumer),
}

/// A consumer name that no handler has.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown consumer `{name}` (known: {known})")]
pub struct UnknownConsumer {
    name: String,
    known: String,
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

    #[test]
    fn consumers_run_together_only_with_valid_distinct_names() {
        assert_eq!(check_names(["debit", "notify"]), Ok(()));
        assert_eq!(
            check_names(["debit", "notify", "debit"]),
            Err(BadConsumers::SameName("debit".into()))
        );
        assert_eq!(
            check_names(["debit", "Debit"]),
            Err(BadConsumers::InvalidName("Debit".into()))
        );
    }

    #[test]
    fn consumers_are_picked_by_name_in_the_order_asked_for() {
        let known = ["debit", "notify", "refund"];
        let names = |names: &[&str]| {
            names
                .iter()
                .map(|name| name.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(&names(&["refund", "debit"]), &known), Ok(vec![2, 0]));
        assert_eq!(pick(&[], &known), Ok(vec![0, 1, 2]), "none asked for: all");
        assert_eq!(
            pick(&names(&["nope"]), &known).unwrap_err().to_string(),
            "unknown consumer `nope` (known: debit, notify, refund)"
        );
        assert_eq!(
            pick(&names(&["debit"]), &["debit", "debit"]),
            Err(BadConsumers::SameName("debit".into())),
            "the known ones are checked before any is picked"
        );
    }
}
