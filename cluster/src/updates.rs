//! The host side of remote servers' resource subscriptions and list
//! changes: what this node's exported servers say, passed on to the nodes
//! that import them.
//!
//! A node whose client subscribes to a remote server's resource asks every
//! node serving it, on `PREFIX.resources.NODE` ([`Hold`]). This node then
//! subscribes its server through its own scope and counts the asking node
//! as one holder beside its own fronts' sessions
//! ([`Warden::hold_resource`]): the server is unsubscribed only after the
//! last of them lets go, and subscribed again whenever it restarts. What
//! an exported server then says — `resources/updated` for a URI some node
//! holds (the URI only: nothing else of the server's leaves), and its
//! resource and prompt list changes — is published on
//! `PREFIX.notice.SERVER` ([`Notice`]), which every node importing the
//! server hears; each passes an update on only to the clients that
//! subscribed. A holder whose heartbeat lapses lets go of everything it
//! held here ([`PRUNE_EVERY`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_nats::jetstream::kv::{self, Operation};
use async_nats::Client;
use futures_util::StreamExt as _;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use warden_actors::{CallOptions, ServerRequest, Warden};

use crate::names::Names;
use crate::wire::{CallReply, Hold, Notice, Outcome};
use crate::Exports;

/// How often the holders' heartbeats are looked at.
const PRUNE_EVERY: Duration = Duration::from_secs(5);

/// The notices passed on.
const PASSED_ON: [&str; 3] =
    ["notifications/resources/updated", "notifications/resources/list_changed", "notifications/prompts/list_changed"];

/// What answering holds needs, and which node holds what.
pub(crate) struct Updates {
    pub(crate) warden: Warden,
    pub(crate) client: Client,
    pub(crate) names: Arc<Names>,
    pub(crate) exports: watch::Receiver<Exports>,
    /// The heartbeats, to let go of a lapsed holder's subscriptions.
    pub(crate) nodes: kv::Store,
    /// (server, URI) → the nodes that hold it (never none).
    holders: Mutex<HashMap<(String, String), BTreeSet<String>>>,
}

impl Updates {
    pub(crate) fn new(
        warden: Warden,
        client: Client,
        names: Arc<Names>,
        exports: watch::Receiver<Exports>,
        nodes: kv::Store,
    ) -> Updates {
        Updates { warden, client, names, exports, nodes, holders: Mutex::default() }
    }

    fn holders(&self) -> MutexGuard<'_, HashMap<(String, String), BTreeSet<String>>> {
        self.holders.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers holds until the task is aborted.
    pub(crate) async fn answer_holds(self: Arc<Self>) {
        let subject = self.names.holds(&self.names.node);
        let Ok(mut asked) = self.client.subscribe(subject.clone()).await else {
            return tracing::error!(
                "cannot subscribe to {subject}: other nodes cannot subscribe to this node's resources"
            );
        };
        while let Some(message) = asked.next().await {
            let Some(reply_to) = message.reply.clone() else { continue };
            let updates = self.clone();
            tokio::spawn(async move {
                let reply = match serde_json::from_slice::<Hold>(&message.payload) {
                    Ok(hold) => updates.hold(hold).await,
                    Err(error) => CallReply::Error {
                        outcome: Outcome::NotRun,
                        message: format!("node {} could not read the subscription: {error}", updates.names.node),
                    },
                };
                let payload = serde_json::to_vec(&reply).expect("a reply serialises");
                let _ = updates.client.publish(reply_to, payload.into()).await;
            });
        }
    }

    async fn hold(&self, hold: Hold) -> CallReply {
        let Hold { server, uri, node, subscribe } = hold;
        if !self.exports.borrow().covers(&server) {
            let message = format!("node {} does not export a server named '{server}'", self.names.node);
            return CallReply::Error { outcome: Outcome::NotRun, message };
        }
        let key = (server.clone(), uri.clone());
        if !subscribe {
            let held = {
                let mut holders = self.holders();
                let held = holders.get_mut(&key).is_some_and(|nodes| nodes.remove(&node));
                if holders.get(&key).is_some_and(BTreeSet::is_empty) {
                    holders.remove(&key);
                }
                held
            };
            if held {
                self.warden.release_resource(&server, &uri).await;
            }
            return CallReply::Result(json!({}));
        }
        if self.holders().get(&key).is_some_and(|nodes| nodes.contains(&node)) {
            return CallReply::Result(json!({}));
        }
        let options = CallOptions::default().via(format!("cluster node {node}"));
        let params = json!({ "uri": uri });
        match self.warden.host().request(&server, ServerRequest::Subscribe, params, options).await {
            Ok(_) => {
                if self.holders().entry(key).or_default().insert(node) {
                    self.warden.hold_resource(&server, &uri);
                }
                CallReply::Result(json!({}))
            }
            Err(error) => CallReply::Error { outcome: Outcome::Failed, message: error.to_string() },
        }
    }

    /// Publishes what the exported servers say, until the task is aborted.
    pub(crate) async fn publish_notices(self: Arc<Self>) {
        let mut notices = self.warden.notices();
        loop {
            let notice = match notices.recv().await {
                Ok(notice) => notice,
                Err(RecvError::Lagged(lost)) => {
                    tracing::warn!(lost, "notices of exported servers were lost before reaching the cluster");
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if !PASSED_ON.contains(&notice.method.as_str()) || !self.exports.borrow().covers(&notice.server) {
                continue;
            }
            let uri = notice.params.as_ref().and_then(|params| params["uri"].as_str()).map(str::to_string);
            let uri = match (notice.method.as_str(), uri) {
                ("notifications/resources/updated", Some(uri)) => {
                    if !self.holders().contains_key(&(notice.server.to_string(), uri.clone())) {
                        continue;
                    }
                    Some(uri)
                }
                ("notifications/resources/updated", None) => continue,
                _ => None,
            };
            let payload = serde_json::to_vec(&Notice { method: notice.method, uri }).expect("a notice serialises");
            let _ = self.client.publish(self.names.notices(&notice.server), payload.into()).await;
        }
    }

    /// Lets go of the subscriptions of holders whose heartbeat lapsed,
    /// until the task is aborted.
    pub(crate) async fn prune(self: Arc<Self>) {
        loop {
            tokio::time::sleep(PRUNE_EVERY).await;
            let holders: BTreeSet<String> = self.holders().values().flatten().cloned().collect();
            for node in holders {
                let alive = match self.nodes.entry(&node).await {
                    Ok(Some(entry)) => entry.operation == Operation::Put,
                    Ok(None) => false,
                    // NATS away: nobody is judged now.
                    Err(_) => true,
                };
                if !alive {
                    self.let_go_of(&node).await;
                }
            }
        }
    }

    async fn let_go_of(&self, node: &str) {
        let held: Vec<(String, String)> = {
            let mut holders = self.holders();
            let held = holders.iter_mut().filter_map(|(key, nodes)| nodes.remove(node).then(|| key.clone())).collect();
            holders.retain(|_, nodes| !nodes.is_empty());
            held
        };
        if !held.is_empty() {
            tracing::info!(
                node,
                subscriptions = held.len(),
                "node {node} is gone: letting go of its resource subscriptions"
            );
        }
        for (server, uri) in held {
            self.warden.release_resource(&server, &uri).await;
        }
    }
}
