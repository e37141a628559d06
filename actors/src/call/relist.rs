//! A caller that did not find a tool name has the lists it could be in
//! read again first, when their servers' changes may go unheard
//! (`server_actor/freshness.rs` says when, and bounds it to once a second
//! per server).
//!
//! Only a miss comes here: a known tool's call reads the snapshot and goes
//! on. The name's prefix picks the server (`py__grown` → `py`); a name no
//! server's prefix starts (a provider-safe name shortened past it, or a
//! typo) asks every running server. The caller waits until each list is
//! in the Registry's table, at most [`WAIT`], then looks again.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::registry::Snapshot;
use crate::server_actor::ServerMsg;
use crate::ServerState;

/// The longest a caller waits for lists read again for it (a listing
/// takes milliseconds; a server that hangs on one must not hold the call).
const WAIT: Duration = Duration::from_secs(5);

/// Reads again the lists `name` could be in (every list, for `None`) that
/// may have changed unheard; returns once they are in the tool table.
pub(crate) async fn relist(snapshot: &watch::Receiver<Arc<Snapshot>>, name: Option<&str>) {
    let waits: Vec<oneshot::Receiver<()>> = {
        let now = snapshot.borrow();
        servers_for(&now, name)
            .into_iter()
            .filter_map(|server| {
                let actor = &now.servers.get(server)?.actor.as_ref()?.actor;
                let (waiter, wait) = oneshot::channel();
                actor.cast(ServerMsg::ListToolsForCaller(waiter)).ok().map(|()| wait)
            })
            .collect()
    };
    if waits.is_empty() {
        return;
    }
    // Each sender is dropped when its list is published (or at once, when
    // nothing needed reading): an error here is the answer. The listings
    // run at once; one deadline bounds waiting for them all.
    let deadline = tokio::time::Instant::now() + WAIT;
    for wait in waits {
        if tokio::time::timeout_at(deadline, wait).await.is_err() {
            tracing::warn!("a tool list read again for a caller took over {} s; going on without it", WAIT.as_secs());
            return;
        }
    }
}

/// The running servers whose tools `name` could be: those its prefix
/// names (with the `_` separator, `a_b_x` may be `a`'s or `a_b`'s) — none
/// when they are not running (a failed server's tools are gone, not
/// unheard) — else, for a name no server's prefix starts, all of them.
fn servers_for<'a>(snapshot: &'a Snapshot, name: Option<&str>) -> Vec<&'a str> {
    let running = |server: &&String| snapshot.servers[*server].status.state == ServerState::Running;
    let separator = snapshot.names.separator.as_str();
    let names = |server: &&String| {
        name.is_none_or(|name| name.strip_prefix(server.as_str()).is_some_and(|rest| rest.starts_with(separator)))
    };
    let mut named = snapshot.servers.keys().filter(names).peekable();
    if named.peek().is_none() {
        return snapshot.servers.keys().filter(running).map(String::as_str).collect();
    }
    named.filter(running).map(String::as_str).collect()
}
