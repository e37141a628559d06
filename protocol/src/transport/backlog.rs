//! How far a connection's reader may run ahead of whoever handles what it
//! reads.
//!
//! A transport reads as fast as the server writes and hands each message
//! to its sink, which (in Warden) casts it into the server's actor — an
//! unbounded mailbox. A server that floods (a hundred thousand progress
//! notifications in a second) would then grow Warden's memory by as much
//! as it can write: measured (debug build, the daemon's resident memory),
//! 76 MB for 100,000 notifications and 184 MB for 300,000 before this
//! existed; 10 MB for either after. So each delivery is counted in a
//! [`Backlog`] until its handler drops the [`Queued`] mark, and the reader
//! stops reading while [`Backlog::LIMIT`] deliveries wait. The server then
//! blocks on its own full pipe (or TCP window): a flood slows the flooder,
//! and nothing else.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A connection's deliveries not yet handled.
#[derive(Debug)]
pub struct Backlog {
    queued: AtomicUsize,
    drained: Notify,
    limit: usize,
}

/// One delivery not yet handled; dropping it makes room.
#[derive(Debug)]
pub struct Queued(Arc<Backlog>);

impl Backlog {
    /// Deliveries (each up to a batch of 64 messages, so about 4,000
    /// messages) that may wait before the reader pauses: more than any
    /// burst of answers, far less than memory. At 256 a flood still grew
    /// the daemon by 33 MB; at 64, by 10 MB.
    pub const LIMIT: usize = 64;

    /// A backlog the reader waits on at [`Backlog::LIMIT`].
    pub fn new() -> Arc<Backlog> {
        Backlog::with_limit(Backlog::LIMIT)
    }

    /// A backlog that never makes the reader wait (for a sink that is not
    /// a mailbox, such as a test's).
    pub fn unlimited() -> Arc<Backlog> {
        Backlog::with_limit(usize::MAX)
    }

    fn with_limit(limit: usize) -> Arc<Backlog> {
        Arc::new(Backlog { queued: AtomicUsize::new(0), drained: Notify::new(), limit })
    }

    /// Counts one delivery until the mark drops.
    pub fn enter(self: &Arc<Self>) -> Queued {
        self.queued.fetch_add(1, Ordering::SeqCst);
        Queued(Arc::clone(self))
    }

    /// Waits while the backlog is full.
    pub async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            if self.queued.load(Ordering::SeqCst) < self.limit {
                return;
            }
            drained.await;
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        // The reader waits only while the count is at the limit or above;
        // counts fall one at a time, so it can go on exactly when one
        // falls from the limit. Any other drop (every answer, on the hot
        // path) wakes nobody.
        if self.0.queued.fetch_sub(1, Ordering::SeqCst) == self.0.limit {
            self.0.drained.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn the_reader_waits_while_full_and_goes_on_when_one_is_handled() {
        let backlog = Backlog::with_limit(2);
        let first = backlog.enter();
        let _second = backlog.enter();
        let waiting = tokio::time::timeout(Duration::from_millis(50), backlog.room()).await;
        assert!(waiting.is_err(), "full: the reader waits");
        let reader = {
            let backlog = Arc::clone(&backlog);
            tokio::spawn(async move { backlog.room().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(first);
        tokio::time::timeout(Duration::from_secs(1), reader).await.expect("room made").unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(50), Backlog::unlimited().room()).await.is_ok());
    }
}
