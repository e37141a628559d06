//! The import side: other nodes' servers, attached here while a live node
//! exports them, detached when none does.
//!
//! Two watchers follow the buckets: the heartbeats (a node is live from
//! its first heartbeat until its key is deleted — it left — or purged —
//! its TTL ran out) and the catalog. After every change the wanted set is
//! worked out — each server that a live node other than this one exports,
//! with the nodes that serve it and the tools the first of them lists —
//! and the attached servers are made to match: a new server is attached
//! (a server actor over a [`RemoteConnector`]), a changed one has its
//! nodes and tools replaced (its actor lists the tools again), one that
//! no node serves is detached (its tools withdrawn at once, its calls in
//! flight told their node is lost).
//!
//! A server configured on this node wins over a remote one of the same
//! name: attaching it is refused, said once in the log, and tried again
//! every second (a reload may remove the local one).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{Entry, Operation};
use async_nats::{jetstream, Client};
use futures_util::StreamExt as _;
use warden_actors::{AttachError, ServerSettings, ServerSpec, Warden};

use crate::buckets::{Buckets, HEARTBEAT_TTL};
use crate::metrics::ClusterMetrics;
use crate::names::Names;
use crate::remote::AskRoutes;
use crate::remote::{RemoteConnector, RemoteServer, Serving};
use crate::view::{ClusterView, NodeView, RemoteServerView};
use crate::wire::{CatalogEntry, Heartbeat, Offers};
use tokio::sync::watch;

/// What importing needs and keeps.
pub(crate) struct Importer {
    pub(crate) warden: Warden,
    pub(crate) names: Arc<Names>,
    pub(crate) client: Client,
    pub(crate) js: jetstream::Context,
    /// The settings each remote server runs with here.
    pub(crate) settings: ServerSettings,
    /// Live nodes other than this one, and when each was last heard.
    nodes: HashMap<String, (Heartbeat, Instant)>,
    /// Catalog entries of other nodes, by (node, server), their tools
    /// shared (not copied) with the servers they describe.
    catalog: HashMap<(String, String), Offered>,
    /// The remote servers attached here.
    attached: HashMap<String, Arc<RemoteServer>>,
    /// Servers whose detaching is under way.
    detaching: HashMap<String, tokio::task::JoinHandle<()>>,
    /// Servers a local server of the same name shadows (said once).
    shadowed: HashSet<String>,
    /// Where what it knows is published.
    view: watch::Sender<ClusterView>,
    /// The cluster's series: live nodes here, attempts in its remote servers.
    metrics: Arc<ClusterMetrics>,
    /// Where remote servers' questions find their calls (`asks.rs`).
    routes: Arc<AskRoutes>,
}

impl Importer {
    pub(crate) fn new(
        warden: Warden,
        names: Arc<Names>,
        client: Client,
        js: jetstream::Context,
        settings: ServerSettings,
        view: watch::Sender<ClusterView>,
        metrics: Arc<ClusterMetrics>,
        routes: Arc<AskRoutes>,
    ) -> Importer {
        Importer {
            metrics,
            routes,
            warden,
            names,
            client,
            js,
            settings,
            nodes: HashMap::new(),
            catalog: HashMap::new(),
            attached: HashMap::new(),
            detaching: HashMap::new(),
            shadowed: HashSet::new(),
            view,
        }
    }

    /// Reads what the buckets hold now and attaches what other nodes
    /// export (so a node that just joined serves their tools at once),
    /// then says so on `synced` and follows the buckets until the task is
    /// aborted, watching them again after NATS lost them.
    pub(crate) async fn run(mut self, mut buckets: Buckets, synced: tokio::sync::oneshot::Sender<()>) {
        if let Err(error) = self.load(&buckets).await {
            tracing::warn!("cannot read the cluster's buckets ({error}); following their changes instead");
        }
        self.reconcile().await;
        let _ = synced.send(());
        loop {
            let watches = async {
                let nodes = buckets.nodes.watch_with_history(">").await?;
                let catalog = buckets.catalog.watch_with_history(">").await?;
                Ok::<_, async_nats::Error>((nodes, catalog))
            };
            let (mut nodes, mut catalog) = match watches.await {
                Ok(watches) => watches,
                Err(error) => {
                    tracing::warn!("cannot watch the cluster's buckets ({error}); trying again in 1 s");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if let Ok(opened) = Buckets::open(&self.js, &self.names).await {
                        buckets = opened;
                    }
                    continue;
                }
            };
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                // Most events are heartbeats of known nodes: they change
                // nothing but the time a node was heard, and cost no
                // reconciling (with many servers, that was most of the
                // importer's work).
                let changed = tokio::select! {
                    entry = nodes.next() => match entry {
                        Some(Ok(entry)) => self.node_changed(entry),
                        _ => break,
                    },
                    entry = catalog.next() => match entry {
                        Some(Ok(entry)) => self.catalog_changed(entry),
                        _ => break,
                    },
                    _ = tick.tick() => self.lapse() || !self.detaching.is_empty() || !self.shadowed.is_empty(),
                };
                if changed {
                    self.reconcile().await;
                }
            }
            tracing::warn!("the cluster's buckets stopped answering (NATS restarted?); reading them again");
            tokio::time::sleep(Duration::from_millis(250)).await;
            if let Ok(opened) = Buckets::open(&self.js, &self.names).await {
                buckets = opened;
            }
            // What they held may be gone with NATS: start from what they
            // hold now (live nodes put their heartbeats again within
            // half a second, their catalogs at once).
            self.nodes.clear();
            self.catalog.clear();
            if self.load(&buckets).await.is_ok() {
                self.reconcile().await;
            }
        }
    }

    /// Reads every current heartbeat and catalog entry.
    async fn load(&mut self, buckets: &Buckets) -> Result<(), async_nats::Error> {
        for (store, nodes) in [(&buckets.nodes, true), (&buckets.catalog, false)] {
            let keys: Vec<String> = store.keys().await?.filter_map(|key| async move { key.ok() }).collect().await;
            for key in keys {
                if let Some(entry) = store.entry(&key).await? {
                    if nodes {
                        self.node_changed(entry);
                    } else {
                        self.catalog_changed(entry);
                    }
                }
            }
        }
        Ok(())
    }

    /// Notes a heartbeat (or a node's end); whether who is alive changed.
    fn node_changed(&mut self, entry: Entry) -> bool {
        if entry.key == self.names.node {
            return false;
        }
        match entry.operation {
            Operation::Put => match serde_json::from_slice::<Heartbeat>(&entry.value) {
                Ok(beat) => {
                    let now = Instant::now();
                    let changed = match self.nodes.get(&entry.key) {
                        Some((known, _)) => *known != beat,
                        None => {
                            tracing::info!(node = %entry.key, "node joined the cluster");
                            true
                        }
                    };
                    self.nodes.insert(entry.key.clone(), (beat, now));
                    if !changed {
                        self.view.send_modify(|view| {
                            if let Some(node) = view.nodes.iter_mut().find(|node| node.name == entry.key) {
                                node.heard = now;
                            }
                        });
                    }
                    changed
                }
                Err(error) => {
                    tracing::warn!(node = %entry.key, "ignored a heartbeat that does not decode: {error}");
                    false
                }
            },
            Operation::Delete | Operation::Purge => {
                if self.nodes.remove(&entry.key).is_some() {
                    let how = if entry.operation == Operation::Delete {
                        "left"
                    } else {
                        "stopped answering (heartbeat lapsed)"
                    };
                    tracing::warn!(node = %entry.key, "node {how}: its servers are withdrawn");
                    return true;
                }
                false
            }
        }
    }

    /// Notes a catalog entry; whether what the cluster offers changed.
    fn catalog_changed(&mut self, entry: Entry) -> bool {
        let Some((node, server)) = Names::split_catalog_key(&entry.key) else { return false };
        if node == self.names.node {
            return false;
        }
        let key = (node.to_string(), server.to_string());
        match entry.operation {
            Operation::Put => match serde_json::from_slice::<CatalogEntry>(&entry.value) {
                Ok(catalog) => {
                    let offered = Offered::from(catalog);
                    // The same entry written again (every few seconds)
                    // keeps the tools already shared.
                    if self.catalog.get(&key).is_some_and(|known| known.same_as(&offered)) {
                        return false;
                    }
                    self.catalog.insert(key, offered);
                    true
                }
                Err(error) => {
                    tracing::warn!(node, server, "ignored a catalog entry that does not decode: {error}");
                    false
                }
            },
            Operation::Delete | Operation::Purge => self.catalog.remove(&key).is_some(),
        }
    }

    /// Drops the nodes whose heartbeat was not seen for longer than its
    /// TTL, even without NATS' purge marker (which a NATS restart loses);
    /// whether any was.
    fn lapse(&mut self) -> bool {
        let limit = HEARTBEAT_TTL + Duration::from_secs(1);
        let before = self.nodes.len();
        self.nodes.retain(|node, (_, heard)| {
            let live = heard.elapsed() <= limit;
            if !live {
                tracing::warn!(node = %node, "no heartbeat from node {node} for {limit:?}: its servers are withdrawn");
            }
            live
        });
        self.nodes.len() != before
    }

    /// Who serves what, among the live nodes.
    fn wanted(&self) -> BTreeMap<String, Serving> {
        let mut wanted: BTreeMap<String, Serving> = BTreeMap::new();
        let mut entries: Vec<&Offered> =
            self.catalog.values().filter(|entry| self.nodes.contains_key(&entry.node)).collect();
        entries.sort_by(|a, b| (&a.server, &a.node).cmp(&(&b.server, &b.node)));
        for entry in entries {
            let serving = wanted.entry(entry.server.clone()).or_insert_with(|| Serving {
                nodes: Vec::new(),
                tools: entry.tools.clone(),
                server_info: entry.server_info.clone(),
                offers: entry.offers,
            });
            serving.nodes.push(entry.node.clone());
        }
        wanted
    }

    async fn reconcile(&mut self) {
        self.detaching.retain(|_, task| !task.is_finished());
        self.lapse();
        let wanted = self.wanted();
        for (server, serving) in &wanted {
            if let Some(remote) = self.attached.get(server) {
                remote.set_serving(serving.clone());
                continue;
            }
            if self.detaching.contains_key(server) {
                continue;
            }
            let remote = Arc::new(RemoteServer::new(
                server,
                self.names.clone(),
                self.client.clone(),
                self.settings.call_timeout,
                self.metrics.clone(),
                self.routes.clone(),
            ));
            remote.set_serving(serving.clone());
            let spec = ServerSpec {
                name: server.clone(),
                connector: Arc::new(RemoteConnector(remote.clone())),
                settings: self.settings.clone(),
            };
            match self.warden.attach_server(spec).await {
                Ok(()) => {
                    tracing::info!(server = %server, nodes = ?serving.nodes, "attached a server of the cluster");
                    self.shadowed.remove(server);
                    self.attached.insert(server.clone(), remote);
                }
                Err(AttachError::Taken(_)) => {
                    if self.shadowed.insert(server.clone()) {
                        tracing::info!(
                            server = %server,
                            nodes = ?serving.nodes,
                            "'{server}' is a server of this node: the cluster's '{server}' is not used here"
                        );
                    }
                }
                Err(error) => {
                    if self.shadowed.insert(server.clone()) {
                        tracing::warn!(server = %server, "cannot attach the cluster's '{server}': {error}");
                    }
                }
            }
        }
        let gone: Vec<String> = self.attached.keys().filter(|server| !wanted.contains_key(*server)).cloned().collect();
        for server in gone {
            let Some(remote) = self.attached.remove(&server) else { continue };
            // Calls in flight learn their node is lost now, not at their
            // deadline.
            remote.set_serving(Serving::default());
            tracing::warn!(server = %server, "no live node serves '{server}' any more: detached");
            let warden = self.warden.clone();
            let name = server.clone();
            let task = tokio::spawn(async move {
                warden.detach_server(&name).await;
            });
            self.detaching.insert(server, task);
        }
        self.publish(&wanted);
    }

    /// Publishes who is alive and who serves what.
    fn publish(&self, wanted: &BTreeMap<String, Serving>) {
        let mut nodes: Vec<NodeView> = self
            .nodes
            .iter()
            .map(|(name, (beat, heard))| NodeView {
                name: name.clone(),
                version: beat.version.clone(),
                exports: beat.exports.clone(),
                heard: *heard,
                heartbeat_age_secs: 0.0,
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let servers = wanted
            .iter()
            .map(|(name, serving)| RemoteServerView {
                name: name.clone(),
                nodes: serving.nodes.clone(),
                attached: self.attached.contains_key(name),
            })
            .collect();
        self.metrics.live_nodes(nodes.len());
        self.view.send_modify(|view| {
            view.nodes = nodes;
            view.servers = servers;
        });
    }
}

/// A catalog entry as the importer keeps it: its tools in an `Arc`, shared
/// with the remote server they describe.
struct Offered {
    node: String,
    server: String,
    server_info: Option<serde_json::Value>,
    tools: Arc<Vec<serde_json::Value>>,
    offers: Offers,
}

impl From<CatalogEntry> for Offered {
    fn from(entry: CatalogEntry) -> Offered {
        let (node, server, server_info, offers) = (entry.node, entry.server, entry.server_info, entry.offers);
        Offered { node, server, server_info, tools: Arc::new(entry.tools), offers }
    }
}

impl Offered {
    fn same_as(&self, other: &Offered) -> bool {
        self.server_info == other.server_info && self.offers == other.offers && *self.tools == *other.tools
    }
}
