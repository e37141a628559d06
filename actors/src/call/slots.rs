//! Each server's settings and calls in flight, as the call path reads them.
//!
//! Read on every call (one `watch` borrow, one hash lookup) and replaced
//! whole by a reload. A call holds its server's slot until it ends, so a
//! reload that removes or restarts the server can wait for the calls in
//! flight (bounded) before it stops the server.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;

use crate::server_settings::ServerSettings;

/// Each server's settings and calls in flight, for the call path (looked
/// up on every call, hence the fast hasher).
pub(crate) type Slots = HashMap<String, Slot, foldhash::fast::RandomState>;

/// One server's settings and a counter of its calls in flight.
#[derive(Clone)]
pub(crate) struct Slot {
    /// Shared, not copied, by every call to the server.
    pub(crate) settings: Arc<ServerSettings>,
    /// Every call holds a receiver; `closed()` fires when none is left.
    calls: Arc<watch::Sender<()>>,
}

impl Slot {
    pub(crate) fn new(settings: ServerSettings) -> Slot {
        Slot { settings: Arc::new(settings), calls: Arc::new(watch::Sender::new(())) }
    }

    /// The same server's slot with new settings: calls in flight still count.
    pub(crate) fn with_settings(&self, settings: ServerSettings) -> Slot {
        Slot { settings: Arc::new(settings), calls: Arc::clone(&self.calls) }
    }

    /// Returns once no call holds this slot.
    pub(crate) async fn drained(&self) {
        self.calls.closed().await;
    }

    /// Marks a call in flight until the returned guard is dropped.
    pub(crate) fn begin_call(&self) -> watch::Receiver<()> {
        self.calls.subscribe()
    }
}
