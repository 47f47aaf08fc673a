//! Retention: inbox rows cannot be kept forever, and must not be deleted
//! early.
//!
//! The inbox only recognises a duplicate while the first delivery's row is
//! still there. Delete it before the broker has given up redelivering that
//! message and a late redelivery applies a second time. So `purge` refuses
//! a window shorter than the configured redelivery horizon unless forced.
//! The deleting itself is the database module's
//! [`Store::purge`](crate::store::Store::purge): small transactions, so that
//! deliveries running at the same time never wait long.

use std::time::{Duration, SystemTime};

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
    crate::inbox::unix_millis(
        now.checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH),
    )
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
        let now = crate::inbox::unix_millis(SystemTime::now());
        let cutoff = cutoff_millis(DAY);
        let day = DAY.as_millis() as i64;
        assert!(
            (now - day - 1_000..=now - day).contains(&cutoff),
            "{cutoff}"
        );
    }
}
