//! The daemon's one stop signal, whoever pulls it.
//!
//! SIGTERM, SIGINT, the `shutdown` op and the idle timer all end the daemon
//! the same graceful way, so they all pull this one switch and the serve
//! loop does the rest; the first reason wins and is logged.

use tokio::sync::watch;

/// A switch that flips once.
#[derive(Debug, Clone)]
pub(crate) struct Shutdown {
    reason: watch::Sender<Option<String>>,
}

impl Shutdown {
    /// Not triggered yet.
    pub(crate) fn new() -> Shutdown {
        Shutdown { reason: watch::Sender::new(None) }
    }

    /// Asks the daemon to stop; later reasons are ignored.
    pub(crate) fn trigger(&self, reason: impl Into<String>) {
        let reason = reason.into();
        self.reason.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(reason);
            true
        });
    }

    /// True once somebody asked.
    pub(crate) fn is_triggered(&self) -> bool {
        self.reason.borrow().is_some()
    }

    /// Waits until somebody asks; returns why.
    pub(crate) async fn triggered(&self) -> String {
        let mut reason = self.reason.subscribe();
        let reason = reason.wait_for(Option::is_some).await.expect("the sender lives in self");
        reason.clone().unwrap_or_default()
    }
}
