//! How much of a server's stderr reaches Warden's log.
//!
//! stderr is a server's own log, and Warden logs it under the server's
//! name. A server that writes two million lines in a few seconds would turn
//! that into a log growing by megabytes a second, so each server gets a
//! budget per window: [`StderrBudget::LINES`] lines and
//! [`StderrBudget::BYTES`] bytes every [`StderrBudget::WINDOW`]. Lines past
//! it are counted, not logged, and when the window closes one line says how
//! many were left out. The server's last lines are kept for `status` either
//! way (`StderrTail`), so the newest output is never lost to the budget.

use std::time::Duration;

use tokio::time::Instant;

/// One server's stderr budget.
#[derive(Debug)]
pub(crate) struct StderrBudget {
    window_start: Instant,
    lines: u32,
    bytes: usize,
    /// Lines left out in this window.
    suppressed: u64,
}

/// What to do with one line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Log,
    Skip,
}

impl StderrBudget {
    /// The length of one window.
    pub(crate) const WINDOW: Duration = Duration::from_secs(10);
    /// Lines logged per window.
    pub(crate) const LINES: u32 = 200;
    /// Bytes logged per window (a server's lines may each be 64 KiB).
    pub(crate) const BYTES: usize = 64 * 1024;

    pub(crate) fn new(now: Instant) -> StderrBudget {
        StderrBudget { window_start: now, lines: 0, bytes: 0, suppressed: 0 }
    }

    /// Whether a line of `len` bytes arriving at `now` is logged. A window
    /// that has closed is closed first: its count of left-out lines is
    /// returned, for the caller to log before this line.
    pub(crate) fn admit(&mut self, len: usize, now: Instant) -> (Option<u64>, Verdict) {
        let closed = if now >= self.window_end() { self.close(now) } else { None };
        if self.lines < Self::LINES && self.bytes + len <= Self::BYTES {
            self.lines += 1;
            self.bytes += len;
            return (closed, Verdict::Log);
        }
        self.suppressed += 1;
        (closed, Verdict::Skip)
    }

    /// When the current window ends, if lines were left out in it (the
    /// caller wakes then to say so, even if the server has gone quiet).
    pub(crate) fn summary_due(&self) -> Option<Instant> {
        (self.suppressed > 0).then(|| self.window_end())
    }

    /// Starts a new window at `now`; returns how many lines the old one
    /// left out, if any.
    pub(crate) fn close(&mut self, now: Instant) -> Option<u64> {
        let suppressed = std::mem::take(&mut self.suppressed);
        *self = StderrBudget::new(now);
        (suppressed > 0).then_some(suppressed)
    }

    fn window_end(&self) -> Instant {
        self.window_start + Self::WINDOW
    }
}

#[cfg(test)]
mod tests;
