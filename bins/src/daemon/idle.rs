//! When the daemon has nothing to do: the idle timer.
//!
//! A daemon nobody uses should not hold a dozen MCP server processes
//! forever, so it exits after `idle_timeout_minutes` without a request. Any
//! request counts, and so does a call still running: a ten-minute build
//! started by the last request keeps the daemon up until it ends, and the
//! timer starts over then. (A call waiting for approval is a call in
//! flight, so it counts too once the daemon's approval queue is wired.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// What the daemon is doing, shared by every connection.
#[derive(Debug)]
pub(crate) struct Activity {
    last: Mutex<Instant>,
    calls: AtomicUsize,
    /// MCP front sessions open: they keep the daemon up, but a stop does
    /// not wait for them to end (it ends them).
    sessions: AtomicUsize,
    timeout: Option<Duration>,
}

/// A call in flight or an open front session; dropping it ends it (and
/// counts as activity).
#[derive(Debug)]
pub(crate) struct Busy {
    activity: Arc<Activity>,
    /// Which count it is in: `calls` or `sessions`.
    count: fn(&Activity) -> &AtomicUsize,
}

impl Busy {
    fn begin(activity: &Arc<Activity>, count: fn(&Activity) -> &AtomicUsize) -> Busy {
        count(activity).fetch_add(1, Ordering::AcqRel);
        activity.touch();
        Busy { activity: Arc::clone(activity), count }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.activity.touch();
        (self.count)(&self.activity).fetch_sub(1, Ordering::AcqRel);
    }
}

impl Activity {
    /// Idle since now, timing out after `timeout` (never when `None`).
    pub(crate) fn new(timeout: Option<Duration>) -> Arc<Activity> {
        Arc::new(Activity {
            last: Mutex::new(Instant::now()),
            calls: AtomicUsize::new(0),
            sessions: AtomicUsize::new(0),
            timeout,
        })
    }

    /// Something happened: the timer starts over.
    pub(crate) fn touch(&self) {
        *self.last.lock().expect("never poisoned") = Instant::now();
    }

    /// A call starts; it keeps the daemon up until the guard is dropped.
    pub(crate) fn begin_call(self: &Arc<Self>) -> Busy {
        Busy::begin(self, |activity| &activity.calls)
    }

    /// An MCP front session opens; it keeps the daemon up until the guard
    /// is dropped.
    pub(crate) fn begin_session(self: &Arc<Self>) -> Busy {
        Busy::begin(self, |activity| &activity.sessions)
    }

    /// Calls running now.
    pub(crate) fn calls_in_flight(&self) -> usize {
        self.calls.load(Ordering::Acquire)
    }

    /// The idle timeout; `None`: never.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// How long since the last request or call.
    pub(crate) fn idle_for(&self) -> Duration {
        self.last.lock().expect("never poisoned").elapsed()
    }

    /// How long until the daemon exits if nothing happens; `None` while a
    /// call runs, or when it never exits on idleness.
    pub(crate) fn exits_in(&self) -> Option<Duration> {
        let timeout = self.timeout?;
        (self.calls_in_flight() == 0 && self.sessions.load(Ordering::Acquire) == 0)
            .then(|| timeout.saturating_sub(self.idle_for()))
    }

    /// Returns once the daemon has been idle for the whole timeout.
    pub(crate) async fn expired(&self) {
        let Some(timeout) = self.timeout else { return std::future::pending().await };
        loop {
            let deadline = *self.last.lock().expect("never poisoned") + timeout;
            tokio::time::sleep_until(deadline).await;
            if self.calls_in_flight() > 0 || self.sessions.load(Ordering::Acquire) > 0 {
                // A running call or an open session is activity; look again a timeout later.
                self.touch();
                continue;
            }
            if self.idle_for() >= timeout {
                return;
            }
        }
    }

    /// Waits until no call runs, or until `limit` has passed; true if none runs.
    pub(crate) async fn drained(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.calls_in_flight() > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

#[cfg(test)]
mod tests;
