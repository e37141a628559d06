//! What this node tells the cluster about itself: its heartbeat, and the
//! catalog of the servers it exports.
//!
//! The heartbeat is put with a TTL ([`HEARTBEAT_TTL`]) every
//! [`HEARTBEAT_EVERY`]; should a put fail (NATS down, the bucket lost in a
//! NATS restart) the next one opens the buckets again, so a node comes back
//! by itself. A catalog entry is written for each exported server that is
//! running, whenever the Registry publishes a change that alters it
//! (tools listed again after `list_changed`, a restart, a reload), and
//! again every [`CATALOG_REFRESH`]; an entry whose server stopped running,
//! or is no longer exported, is deleted.

use std::collections::HashMap;
use std::sync::Arc;

use async_nats::jetstream;
use async_nats::HeaderMap;
use tokio::sync::{watch, Notify};
use warden_actors::{ServerState, Snapshot, Warden};

use crate::buckets::{keys_of, Buckets, CATALOG_REFRESH, HEARTBEAT_EVERY, HEARTBEAT_TTL};
use crate::names::Names;
use crate::wire::{CatalogEntry, Heartbeat, Offers};
use crate::Exports;

/// Puts this node's heartbeat until the task is aborted.
pub(crate) async fn heartbeat(
    js: jetstream::Context,
    names: Arc<Names>,
    buckets: Buckets,
    mut beat: Heartbeat,
    exports: watch::Receiver<Exports>,
    rewrite: Arc<Notify>,
) {
    let subject = format!("$KV.{}.{}", names.nodes_bucket(), names.node);
    let mut failing = false;
    let mut buckets = Some(buckets);
    let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if buckets.is_none() {
            buckets = Buckets::open(&js, &names).await.ok();
        }
        beat.exports = exports.borrow().names().to_vec();
        let payload = bytes::Bytes::from(serde_json::to_vec(&beat).expect("a heartbeat serialises"));
        let mut headers = HeaderMap::new();
        headers.insert(async_nats::header::NATS_MESSAGE_TTL, HEARTBEAT_TTL.as_secs().to_string().as_str());
        let put = async {
            js.publish_with_headers(subject.clone(), headers, payload.clone()).await?.await?;
            Ok::<_, async_nats::Error>(())
        };
        match put.await {
            Ok(()) if failing => {
                tracing::info!(node = %names.node, "heartbeat put again: this node is back in the cluster");
                failing = false;
                // The catalog may be gone too: written again now.
                rewrite.notify_one();
            }
            Ok(()) => {}
            Err(error) => {
                if !failing {
                    tracing::warn!(
                        node = %names.node,
                        "cannot put this node's heartbeat ({error}): other nodes withdraw its servers within \
                         {HEARTBEAT_TTL:?}; retrying every {HEARTBEAT_EVERY:?}"
                    );
                }
                failing = true;
                // The bucket may be gone with a NATS restart: open it anew.
                buckets = None;
            }
        }
    }
}

/// Keeps this node's catalog entries current until the task is aborted.
pub(crate) async fn catalog(
    warden: Warden,
    names: Arc<Names>,
    buckets: Buckets,
    mut exports: watch::Receiver<Exports>,
    rewrite: Arc<Notify>,
) {
    let mut snapshots = warden.snapshot_changes();
    // Entries an earlier run of this node left (it crashed, or exported
    // other servers then) are this node's to delete: counted as written,
    // they go unless still wanted.
    let mut written: HashMap<String, Vec<u8>> = HashMap::new();
    let mine = format!("{}.", names.node);
    let keys = keys_of(&buckets.catalog).await;
    written.extend(keys.into_iter().filter(|key| key.starts_with(&mine)).map(|key| (key, Vec::new())));
    let mut refresh = tokio::time::interval(CATALOG_REFRESH);
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut force = true;
    loop {
        let snapshot = snapshots.current();
        let wanted = entries(&snapshot, &names.node, &exports.borrow());
        for (server, entry) in &wanted {
            let key = Names::catalog_key(&names.node, server);
            if !force && written.get(&key) == Some(entry) {
                continue;
            }
            match buckets.catalog.put(&key, entry.clone().into()).await {
                Ok(_) => {
                    written.insert(key, entry.clone());
                }
                Err(error) => tracing::warn!(server = %server, "cannot write the catalog entry of '{server}': {error}"),
            }
        }
        let stale: Vec<String> =
            written.keys().filter(|key| !wanted.contains_key(server_of_key(key))).cloned().collect();
        for key in stale {
            if buckets.catalog.delete(&key).await.is_ok() {
                written.remove(&key);
            }
        }
        force = false;
        tokio::select! {
            changed = snapshots.changed() => if changed.is_none() { return },
            changed = exports.changed() => if changed.is_err() { return },
            _ = refresh.tick() => force = true,
            () = rewrite.notified() => force = true,
        }
    }
}

/// Deletes this node's heartbeat and catalog entries: it is leaving.
pub(crate) async fn withdraw(names: &Names, buckets: &Buckets, servers: impl Iterator<Item = String>) {
    for server in servers {
        let _ = buckets.catalog.delete(Names::catalog_key(&names.node, &server)).await;
    }
    let _ = buckets.nodes.delete(&names.node).await;
}

fn server_of_key(key: &str) -> &str {
    Names::split_catalog_key(key).map_or(key, |(_, server)| server)
}

/// The catalog entries of the exported servers that run, serialised, by
/// server name.
fn entries(snapshot: &Snapshot, node: &str, exports: &Exports) -> HashMap<String, Vec<u8>> {
    let mut by_server: HashMap<String, CatalogEntry> = HashMap::new();
    for status in snapshot.statuses() {
        if exports.covers(&status.name) && matches!(status.state, ServerState::Running) {
            let entry = CatalogEntry {
                node: node.to_string(),
                server: status.name.clone(),
                protocol_version: status.protocol_version.clone(),
                server_info: status.server_info.as_ref().and_then(|info| serde_json::to_value(info).ok()),
                tools: Vec::new(),
                offers: snapshot.offers(&status.name).map_or_else(Offers::default, |offers| Offers {
                    resources: offers.resources,
                    prompts: offers.prompts,
                    completions: offers.completions,
                    subscribe: offers.subscribe,
                }),
            };
            by_server.insert(status.name.clone(), entry);
        }
    }
    let mut tools = snapshot.tools();
    tools.sort_by_key(|entry| entry.position);
    for tool in tools {
        // Resources and prompts as tools are each node's own wrappers:
        // an importing node does not get them (yet).
        if tool.primitive_tool.is_some() {
            continue;
        }
        if let Some(entry) = by_server.get_mut(&tool.server) {
            entry.tools.push(serde_json::to_value(&tool.tool).expect("a tool serialises"));
        }
    }
    by_server
        .into_iter()
        .map(|(server, entry)| (server, serde_json::to_vec(&entry).expect("an entry serialises")))
        .collect()
}
