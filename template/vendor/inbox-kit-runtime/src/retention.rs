//! Retention: inbox rows cannot be kept forever, and must not be deleted
//! early.
//!
//! The inbox only recognises a duplicate while the first delivery's row is
//! still there. Delete it before the broker has given up redelivering that
//! message and a late redelivery applies a second time. So `purge` refuses
//! a window shorter than the configured redelivery horizon unless forced.
//! The deleting itself is each database's (`sqlite::retention`,
//! `postgres::retention`): small transactions, each over a window of keys
//! ([`KeyedTable`]), so that deliveries running at the same time never wait
//! long. A project purges the inbox's tables with them, and its own (sent
//! notifications) the same way.

use std::time::{Duration, SystemTime};

use crate::inbox::unix_millis;

/// A purge window the redelivery horizon forbids.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to purge rows younger than the redelivery horizon ({horizon}): a redelivery of a purged message \
     would apply it a second time. Pass a window of at least {horizon}, or --force if the broker really gives up sooner"
)]
pub struct WithinHorizon {
    horizon: String,
}

/// Checks a purge window against the broker's longest redelivery window.
pub fn check_window(
    older_than: Duration,
    horizon: Duration,
    force: bool,
) -> Result<(), WithinHorizon> {
    if older_than < horizon && !force {
        return Err(WithinHorizon {
            horizon: humantime::format_duration(horizon).to_string(),
        });
    }
    Ok(())
}

/// The timestamp (milliseconds since the Unix epoch) before which rows are
/// older than `older_than`.
pub fn cutoff_millis(older_than: Duration) -> i64 {
    let now = SystemTime::now();
    unix_millis(
        now.checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH),
    )
}

/// The statements that purge one table, walked in the order of its key
/// (two text columns, never empty), with a timestamp column saying when
/// each row expires. No index on that timestamp is needed (every write
/// would pay for one): each transaction deletes the expired rows of one
/// window of `batch_rows` keys, and the whole table is read once.
#[derive(Clone, Copy, Debug)]
pub struct KeyedTable {
    /// The last key of the next window after the key (`?1`/`$1`,
    /// `?2`/`$2`): `LIMIT 1 OFFSET` the third parameter, `batch_rows - 1`.
    pub window_end: &'static str,
    /// Deletes the rows expired before the fifth parameter with keys in
    /// (the first two, the next two].
    pub delete_window: &'static str,
    /// Deletes the rows expired before the third parameter with keys after
    /// the first two (the last, partial window).
    pub delete_rest: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn a_window_inside_the_horizon_is_refused_unless_forced() {
        assert!(check_window(DAY, 14 * DAY, false).is_err());
        assert!(check_window(DAY, 14 * DAY, true).is_ok());
        assert!(check_window(14 * DAY, 14 * DAY, false).is_ok());
        assert!(check_window(30 * DAY, 14 * DAY, false).is_ok());
    }

    #[test]
    fn the_cutoff_is_that_long_ago() {
        let now = unix_millis(SystemTime::now());
        let cutoff = cutoff_millis(DAY);
        let day = DAY.as_millis() as i64;
        assert!(
            (now - day - 1_000..=now - day).contains(&cutoff),
            "{cutoff}"
        );
    }
}
