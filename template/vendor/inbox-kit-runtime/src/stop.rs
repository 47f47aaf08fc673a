//! Stopping gracefully: the first Ctrl-C or SIGTERM asks the running
//! command to finish what it has taken and stop; a second one quits at
//! once. Quitting at once is safe: what was committed is in the database,
//! and what was not was never acknowledged (or marked sent), so it comes
//! again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::progress::note;

/// A request to stop, raised by a signal (or by whoever embeds a command).
#[derive(Default)]
pub struct Stop {
    raised: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Stop {
    pub fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::SeqCst)
    }

    /// Waits until the stop is raised (for work that waits on a network).
    pub async fn raised(&self) {
        let notified = self.notify.notified();
        if !self.is_raised() {
            notified.await;
        }
    }
}

/// Raises `stop` at the first signal, and exits with code 130 at the
/// second.
pub async fn on_signals(stop: Arc<Stop>) {
    if signal().await.is_err() {
        return;
    }
    note(format_args!(
        "stopping: finishing what was already taken (interrupt again to quit now)"
    ));
    stop.raise();
    if signal().await.is_ok() {
        note(format_args!(
            "interrupted twice: quitting; what was not committed will come again"
        ));
        std::process::exit(130);
    }
}

/// Ctrl-C, or SIGTERM where there is such a thing.
async fn signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            interrupt = tokio::signal::ctrl_c() => interrupt,
            _ = terminate.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_raised_stop_stays_raised_and_wakes_whoever_waits() {
        let stop = Arc::new(Stop::default());
        assert!(!stop.is_raised());
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move { stop.raised().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "waits while nothing is raised");
        stop.raise();
        waiter.await.unwrap();
        assert!(stop.is_raised(), "still raised after waking the waiter");
        stop.raised().await;
    }
}
