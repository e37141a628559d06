//! Which of a listener's connections may be closed to make room.
//!
//! A listener holds at most [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS).
//! Without more, a local program that opens that many connections and sends
//! nothing locks every client out for as long as it keeps reconnecting
//! (each silent one lasts the header deadline). So when the table is full,
//! the connection *idle* the longest — waiting for a request's headers,
//! with no request being answered and no answer streaming — is closed for
//! the newcomer. A connection only turns busy once a request has passed
//! the listener's checks (the front refuses a request without its token
//! and closes the connection at once), so a stranger can hold nothing but
//! idle connections, and those go first. Only when every connection is busy
//! answering someone is a newcomer refused.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use hyper::body::{Body, Frame, SizeHint};
use tokio::task::AbortHandle;

/// One open connection.
struct Entry {
    /// Requests being answered, with their answers still streaming.
    busy: Arc<AtomicUsize>,
    /// When it last went idle (or opened).
    idle_since: Arc<Mutex<Instant>>,
    task: Option<AbortHandle>,
}

/// A listener's open connections.
pub(crate) struct Connections {
    limit: usize,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Entry>>,
}

/// A connection's place in the table: its busy count and idle clock, and
/// its removal when the connection's task ends.
pub(crate) struct Place {
    connections: Arc<Connections>,
    number: u64,
    busy: Arc<AtomicUsize>,
    idle_since: Arc<Mutex<Instant>>,
}

impl Connections {
    pub(crate) fn new(limit: usize) -> Arc<Connections> {
        Arc::new(Connections { limit, next: AtomicU64::new(0), open: Mutex::new(HashMap::new()) })
    }

    /// A place for a new connection, closing the longest-idle one when
    /// full; `None` when every connection is busy.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Place> {
        let mut open = self.open.lock().expect("connections lock");
        if open.len() >= self.limit {
            let idlest = open
                .iter()
                .filter(|(_, entry)| entry.busy.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, entry)| *entry.idle_since.lock().expect("idle lock"))
                .map(|(number, _)| *number)?;
            if let Some(task) = open.remove(&idlest).and_then(|entry| entry.task) {
                task.abort();
            }
        }
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let busy = Arc::new(AtomicUsize::new(0));
        let idle_since = Arc::new(Mutex::new(Instant::now()));
        let entry = Entry { busy: Arc::clone(&busy), idle_since: Arc::clone(&idle_since), task: None };
        open.insert(number, entry);
        Some(Place { connections: Arc::clone(self), number, busy, idle_since })
    }

    /// How many connections are open.
    #[cfg(test)]
    fn count(&self) -> usize {
        self.open.lock().expect("connections lock").len()
    }
}

impl Place {
    /// The task serving the connection, so that it can be closed.
    pub(crate) fn serving(&self, task: AbortHandle) {
        if let Some(entry) = self.connections.open.lock().expect("connections lock").get_mut(&self.number) {
            entry.task = Some(task);
        }
    }

    /// Marks one request as being answered until the guard (kept with its
    /// answer's body) drops.
    pub(crate) fn busy(&self) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy { busy: Arc::clone(&self.busy), idle_since: Arc::clone(&self.idle_since) }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.connections.open.lock().expect("connections lock").remove(&self.number);
    }
}

/// A request being answered (see [`Place::busy`]).
pub(crate) struct Busy {
    busy: Arc<AtomicUsize>,
    idle_since: Arc<Mutex<Instant>>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.idle_since.lock().expect("idle lock") = Instant::now();
        self.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An answer's body that keeps its connection busy until it is sent or
/// dropped.
pub(crate) struct Held<B> {
    body: B,
    _busy: Busy,
}

impl<B> Held<B> {
    pub(crate) fn new(body: B, busy: Busy) -> Held<B> {
        Held { body, _busy: busy }
    }
}

impl<B: Body + Unpin> Body for Held<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_idle_connection_makes_room_and_a_busy_one_never_does() {
        let connections = Connections::new(2);
        let first = connections.admit().unwrap();
        let busy = first.busy();
        let second = connections.admit().unwrap();
        // Full: the idle second goes, the busy first stays.
        let third = connections.admit().unwrap();
        assert_eq!(connections.count(), 2);
        assert!(connections.open.lock().unwrap().contains_key(&first.number));
        assert!(!connections.open.lock().unwrap().contains_key(&second.number));
        // With first busy and third idle, third goes next.
        let fourth = connections.admit().unwrap();
        assert!(!connections.open.lock().unwrap().contains_key(&third.number));
        drop(busy);
        drop(second);
        drop(third);
        // Both busy: a newcomer is refused.
        let _held = (first.busy(), fourth.busy());
        assert!(connections.admit().is_none());
    }
}
