//! Grants shared across the cluster: a grant given on one node (`warden
//! approve ID --grant`, the embedded `add_grant`) covers the calls that
//! enter on every node.
//!
//! Each node publishes the grants it gave in the bucket `PREFIX_grants`
//! (`NODE.ID` → the tools, the agent, until when, who gave it), checked
//! every [`PUBLISH_EVERY`], and mirrors the other nodes' entries as grants
//! of its own (`granted_by` says `node a: …`), revoking a mirror when its
//! entry goes. A grant is the giving node's: it ends when it runs out,
//! when that node revokes it, or when it is revoked on any node (a mirror
//! revoked here asks its node to revoke the original, on
//! `PREFIX.grant.revoke.NODE`). A node that dies leaves its grants in
//! force for their time: they were a person's decision, not the node's;
//! when it comes back it clears what its earlier run left.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv;
use async_nats::Client;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::json;
use warden_actors::{GrantRequest, Warden};

use crate::buckets::keys_of;
use crate::names::Names;

/// How often a node looks at its grants for what to publish.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// A grant as the bucket holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SharedGrant {
    tools: String,
    agent: Option<String>,
    /// Milliseconds since the epoch (`None`: while its node keeps it).
    until: Option<u64>,
    granted_by: String,
}

/// The other nodes' grants mirrored here: their key → the local grant's id.
#[derive(Default)]
pub(crate) struct Mirrors {
    local: Mutex<HashMap<String, u64>>,
    /// Held while a mirror is given: until its id is known here, the
    /// publisher would take it for a grant of this node's.
    adopting: tokio::sync::Mutex<()>,
}

impl Mirrors {
    fn ids(&self) -> HashSet<u64> {
        self.local.lock().expect("mirrors lock").values().copied().collect()
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(0))
}

/// Keeps this node's entries equal to the grants it gave, and asks the
/// giving node to revoke a mirror revoked here, until aborted.
pub(crate) async fn publish(
    warden: Warden,
    names: Arc<Names>,
    store: kv::Store,
    client: Client,
    mirrors: Arc<Mirrors>,
) {
    let mine = format!("{}.", names.node);
    let mut written: HashSet<String> = HashSet::new();
    // What an earlier run of this node left ended with it.
    for key in keys_of(&store).await.into_iter().filter(|key| key.starts_with(&mine)) {
        let _ = store.delete(&key).await;
    }
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let adopting = mirrors.adopting.lock().await;
        let grants = warden.grants();
        let mirrored = mirrors.ids();
        drop(adopting);
        let (now, wall) = (std::time::Instant::now(), now_ms());
        let mut given: HashSet<String> = HashSet::new();
        for grant in grants.iter().filter(|grant| !mirrored.contains(&grant.id)) {
            let key = format!("{mine}{}", grant.id);
            // Written once: a grant does not change, and its `until`
            // computed again would differ by the clock's drift.
            if !written.contains(&key) {
                let until = grant
                    .expires_at
                    .map(|at| wall + u64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(0));
                let shared = SharedGrant {
                    tools: grant.tools.as_str().to_string(),
                    agent: grant.agent.clone(),
                    until,
                    granted_by: grant.granted_by.clone(),
                };
                let value = serde_json::to_vec(&shared).expect("a grant serialises");
                if store.put(&key, value.into()).await.is_ok() {
                    written.insert(key.clone());
                }
            }
            given.insert(key);
        }
        let gone: Vec<String> = written.difference(&given).cloned().collect();
        for key in gone {
            if store.delete(&key).await.is_ok() {
                written.remove(&key);
            }
        }
        // A mirror revoked here (not run out): its node revokes the original.
        let live: HashSet<u64> = grants.iter().map(|grant| grant.id).collect();
        let revoked: Vec<String> = {
            let mut local = mirrors.local.lock().expect("mirrors lock");
            let revoked: Vec<String> =
                local.iter().filter(|(_, id)| !live.contains(id)).map(|(key, _)| key.clone()).collect();
            for key in &revoked {
                local.remove(key);
            }
            revoked
        };
        for key in revoked {
            let Some((node, id)) = Names::split_catalog_key(&key) else { continue };
            let payload = json!({ "id": id }).to_string();
            let _ = client.publish(names.revoke_grant(node), payload.into()).await;
        }
    }
}

/// Mirrors the other nodes' grants here until aborted, watching the bucket
/// again after NATS lost it.
pub(crate) async fn mirror(warden: Warden, names: Arc<Names>, store: kv::Store, mirrors: Arc<Mirrors>) {
    let mine = format!("{}.", names.node);
    loop {
        match store.watch_with_history(">").await {
            Ok(mut changes) => {
                while let Some(Ok(entry)) = changes.next().await {
                    if entry.key.starts_with(&mine) {
                        continue;
                    }
                    match entry.operation {
                        kv::Operation::Put => match serde_json::from_slice::<SharedGrant>(&entry.value) {
                            Ok(grant) => adopt(&warden, &mirrors, entry.key, grant).await,
                            Err(error) => {
                                tracing::warn!(key = %entry.key, "a shared grant cannot be read ({error}); is every node the same version?")
                            }
                        },
                        kv::Operation::Delete | kv::Operation::Purge => {
                            let id = mirrors.local.lock().expect("mirrors lock").remove(&entry.key);
                            if let Some(id) = id {
                                warden.revoke_grant(id).await;
                                tracing::info!(grant = %entry.key, "a grant of another node ended there: ended here too");
                            }
                        }
                    }
                }
            }
            Err(error) => tracing::debug!("cannot watch the shared grants ({error}); again shortly"),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Gives here the grant another node gave (`key` names it there).
async fn adopt(warden: &Warden, mirrors: &Mirrors, key: String, grant: SharedGrant) {
    if mirrors.local.lock().expect("mirrors lock").contains_key(&key) {
        return;
    }
    let duration = match grant.until {
        None => None,
        Some(until) => match until.checked_sub(now_ms()) {
            Some(left) if left > 0 => Some(Duration::from_millis(left)),
            _ => return,
        },
    };
    let node = Names::split_catalog_key(&key).map_or("another node", |(node, _)| node);
    let by = format!("node {node}: {}", grant.granted_by);
    let request = GrantRequest { tools: Some(grant.tools.clone()), duration, this_agent_only: grant.agent.is_some() };
    let _adopting = mirrors.adopting.lock().await;
    let given = match warden.scope(grant.agent.as_deref()) {
        Ok(scope) => scope.add_grant(request, &by).await.map_err(|error| error.to_string()),
        Err(error) => Err(error.to_string()),
    };
    match given {
        Ok(id) => {
            mirrors.local.lock().expect("mirrors lock").insert(key.clone(), id);
            tracing::info!(grant = %key, tools = %grant.tools, "a grant given on node {node} covers calls here too");
        }
        Err(error) => tracing::warn!(grant = %key, "a grant given on node {node} cannot be given here: {error}"),
    }
}

/// Revokes this node's grants when another node asks (a mirror of one was
/// revoked there), until aborted.
pub(crate) async fn answer_revokes(client: Client, names: Arc<Names>, warden: Warden) {
    let subject = names.revoke_grant(&names.node);
    let Ok(mut asked) = client.subscribe(subject.clone()).await else {
        tracing::error!("cannot subscribe to {subject}: a grant revoked on another node stays in force here");
        return;
    };
    while let Some(message) = asked.next().await {
        let id = serde_json::from_slice::<serde_json::Value>(&message.payload).ok().and_then(|asked| {
            asked.get("id").and_then(|id| id.as_str().and_then(|id| id.parse().ok()).or(id.as_u64()))
        });
        if let Some(id) = id {
            if warden.revoke_grant(id).await {
                tracing::info!(grant = id, "a grant of this node was revoked on another node: revoked here");
            }
        }
    }
}
