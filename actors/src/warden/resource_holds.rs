//! Who holds a subscription to a server's resource, across every face of
//! one Warden: the sessions of its fronts, and other nodes of its cluster.
//!
//! A server has one connection, shared by every caller: a subscription
//! made on it serves them all, and an unsubscribe ends it for all. So a
//! face subscribes through its own scope (its allowlist is asked each
//! time; the server takes a repeated subscribe as one), then counts
//! itself here, and lets go here: the server is unsubscribed only after
//! the last holder, whichever face it belongs to. Counted per face, a
//! front's last session leaving ended a subscription that another front,
//! or another node, still relied on.
//!
//! A restarted server's new connection knows nothing of what the old one
//! was asked: every subscription held is made again when a server
//! connects again (`upkeep`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::json;

use super::{Core, Warden};
use crate::call::forward::ServerRequest;
use crate::call::CallOptions;

/// (server, the server's URI) → how many hold it.
#[derive(Default)]
pub(super) struct ResourceHolds {
    counts: Mutex<HashMap<(String, String), usize>>,
}

impl ResourceHolds {
    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), usize>> {
        self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Warden {
    /// Counts one more holder of the subscription to `uri` of `server`,
    /// which the caller has just made (`ServerRequest::Subscribe` through
    /// its scope). Held subscriptions are made again whenever the server
    /// reconnects.
    pub fn hold_resource(&self, server: &str, uri: &str) {
        *self.core.resource_holds.counts().entry((server.to_string(), uri.to_string())).or_default() += 1;
    }

    /// Counts one holder less; after the last, unsubscribes the server.
    pub async fn release_resource(&self, server: &str, uri: &str) {
        let key = (server.to_string(), uri.to_string());
        let last = {
            let mut counts = self.core.resource_holds.counts();
            match counts.get_mut(&key) {
                Some(count) if *count > 1 => {
                    *count -= 1;
                    false
                }
                Some(_) => counts.remove(&key).is_some(),
                None => false,
            }
        };
        if last {
            let params = json!({ "uri": uri });
            if let Err(error) =
                self.host().request(server, ServerRequest::Unsubscribe, params, CallOptions::default()).await
            {
                tracing::debug!(server, %error, "unsubscribing upstream failed");
            }
        }
    }

    /// The URIs of `server` somebody holds a subscription to.
    fn held_on(&self, server: &str) -> Vec<String> {
        let counts = self.core.resource_holds.counts();
        counts.keys().filter(|(name, _)| name == server).map(|(_, uri)| uri.clone()).collect()
    }
}

/// Makes every held subscription again when its server connects again.
/// Ends with the last handle.
pub(super) async fn upkeep(core: Weak<Core>) {
    let Some(mut reconnections) = core.upgrade().map(|core| Warden { core }.reconnections()) else { return };
    while let Some(server) = reconnections.next().await {
        let Some(core) = core.upgrade() else { return };
        resubscribe(&Warden { core }, &server).await;
    }
}

async fn resubscribe(warden: &Warden, server: &str) {
    let uris = warden.held_on(server);
    if uris.is_empty() {
        return;
    }
    tracing::info!(server, subscriptions = uris.len(), "server reconnected: subscribing again to its resources");
    for uri in uris {
        let params = json!({ "uri": uri });
        if let Err(error) =
            warden.host().request(server, ServerRequest::Subscribe, params, CallOptions::default()).await
        {
            tracing::warn!(server, %error, "subscribing again to '{uri}' failed");
        }
    }
}

/// Starts the upkeep of `core`'s holds.
pub(super) fn start(core: &Arc<Core>) {
    tokio::spawn(upkeep(Arc::downgrade(core)));
}
