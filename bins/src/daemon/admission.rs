//! Who gets a connection slot, and for how long.
//!
//! Anyone on the machine can open a TCP connection to the bridge; only a
//! holder of the token may keep one. So a connection starts *unproven*: it
//! must send a whole request carrying the right token within
//! [`PROVE_WITHIN`], in a first line of at most [`MAX_UNPROVEN_LINE_BYTES`],
//! or it is closed. Unproven connections have their own small pool
//! ([`MAX_UNPROVEN`]); when it is full the *oldest* unproven connection is
//! closed to make room, so a program that opens hundreds of silent
//! connections only churns that pool, while a real client — which sends its
//! token a moment after connecting — gets in. Only a proven connection
//! takes one of the [`MAX_CONNECTIONS`] slots, so the cap counts clients
//! that hold the token, not sockets.
//!
//! A proven connection with nothing in flight must send a whole line
//! within the daemon's `connection_idle_secs` (`[daemon]`), or it is closed
//! too: an idle client does not hold a slot forever, and neither does one
//! that trickles a 16 MiB line a byte a second.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// The most proven connections served at once; more are answered `busy`.
pub(crate) const MAX_CONNECTIONS: usize = 512;

/// The most connections waiting to prove themselves. A real client proves
/// itself within milliseconds, so this only needs to cover a burst of
/// clients connecting at once.
pub(crate) const MAX_UNPROVEN: usize = 64;

/// How long a new connection has to send its first request with the token.
pub(crate) const PROVE_WITHIN: Duration = Duration::from_secs(5);

/// The longest first line of an unproven connection. Before the token is
/// checked the daemon buffers for a stranger, so it buffers little:
/// [`MAX_UNPROVEN`] × this is what strangers can make it hold. A client with
/// a larger first request sends a `ping` first (the CLI does).
pub(crate) const MAX_UNPROVEN_LINE_BYTES: usize = 1024 * 1024;

/// The two pools: unproven connections (oldest evicted first) and proven
/// ones (a semaphore of [`MAX_CONNECTIONS`]).
#[derive(Debug)]
pub(crate) struct Admission {
    unproven: Mutex<Unproven>,
    proven: Arc<Semaphore>,
}

#[derive(Debug, Default)]
struct Unproven {
    next: u64,
    /// Arrival number → the switch that closes that connection.
    waiting: BTreeMap<u64, oneshot::Sender<()>>,
}

/// An unproven connection's place in its pool; leaves the pool on drop.
#[derive(Debug)]
pub(crate) struct Arrival {
    number: u64,
    admission: Arc<Admission>,
    /// Fires when a newer connection needed the place.
    pub(crate) evicted: oneshot::Receiver<()>,
}

/// Every proven slot is taken.
#[derive(Debug)]
pub(crate) struct Busy;

impl Admission {
    pub(crate) fn new() -> Arc<Admission> {
        Arc::new(Admission { unproven: Mutex::default(), proven: Arc::new(Semaphore::new(MAX_CONNECTIONS)) })
    }

    /// Enters a new connection in the unproven pool, closing the oldest
    /// one there when the pool is full.
    pub(crate) fn arrive(self: &Arc<Self>) -> Arrival {
        let (evict, evicted) = oneshot::channel();
        let mut pool = self.unproven.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while pool.waiting.len() >= MAX_UNPROVEN {
            let Some((_, oldest)) = pool.waiting.pop_first() else { break };
            let _ = oldest.send(());
        }
        let number = pool.next;
        pool.next += 1;
        pool.waiting.insert(number, evict);
        Arrival { number, admission: Arc::clone(self), evicted }
    }

    /// How many connections are waiting to prove themselves.
    #[cfg(test)]
    fn unproven(&self) -> usize {
        self.unproven.lock().unwrap().waiting.len()
    }
}

impl Arrival {
    /// The connection sent the token: it leaves the unproven pool and takes
    /// a proven slot, if one is free.
    pub(crate) fn prove(self) -> Result<OwnedSemaphorePermit, Busy> {
        Arc::clone(&self.admission.proven).try_acquire_owned().map_err(|_| Busy)
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        let mut pool = self.admission.unproven.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        pool.waiting.remove(&self.number);
    }
}

#[cfg(test)]
mod tests;
