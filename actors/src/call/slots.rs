//! Each server's settings and calls in flight, as the call path reads them.
//!
//! Read on every call (one `watch` borrow, one hash lookup) and replaced
//! whole by a reload. A call holds its server's slot until it ends, so a
//! reload that removes or restarts the server can wait for the calls in
//! flight (bounded) before it stops the server.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::watch;
use warden_protocol::Authorizer;

use crate::server_settings::ServerSettings;

/// Each server's settings and calls in flight, for the call path (looked
/// up on every call, hence the fast hasher).
#[derive(Clone, Default)]
pub(crate) struct Slots {
    by_server: HashMap<String, Slot, foldhash::fast::RandomState>,
    /// The servers that log in with OAuth: every call's arguments are
    /// checked for their tokens, and walking every server's settings for
    /// them on each call cost a call at 1,000 servers half its speed.
    oauth: Vec<(String, Arc<Authorizer>)>,
}

impl Slots {
    /// The slot of the server named `server`.
    pub(crate) fn get(&self, server: &str) -> Option<&Slot> {
        self.by_server.get(server)
    }

    /// The servers that log in with OAuth, and their authorizers.
    pub(crate) fn oauth(&self) -> &[(String, Arc<Authorizer>)] {
        &self.oauth
    }

    /// These slots with `server`'s set to `slot`.
    pub(crate) fn with(&self, server: &str, slot: Slot) -> Slots {
        let others = self.by_server.iter().filter(|(name, _)| name.as_str() != server);
        others.map(|(name, slot)| (name.clone(), slot.clone())).chain([(server.to_string(), slot)]).collect()
    }

    /// These slots without `server`'s.
    pub(crate) fn without(&self, server: &str) -> Slots {
        let others = self.by_server.iter().filter(|(name, _)| name.as_str() != server);
        others.map(|(name, slot)| (name.clone(), slot.clone())).collect()
    }
}

impl FromIterator<(String, Slot)> for Slots {
    fn from_iter<I: IntoIterator<Item = (String, Slot)>>(slots: I) -> Slots {
        let by_server: HashMap<_, _, _> = slots.into_iter().collect();
        let oauth = by_server
            .iter()
            .filter_map(|(name, slot)| Some((name.clone(), Arc::clone(slot.settings.oauth.as_ref()?))))
            .collect();
        Slots { by_server, oauth }
    }
}

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
