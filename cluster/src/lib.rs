//! Warden nodes that share their MCP servers through NATS.
//!
//! A node **exports** some of its servers: it answers calls for them on
//! NATS, publishes what they offer in a key-value bucket, and puts a
//! heartbeat with a TTL so the others know it is alive. A node
//! **imports** what the others export: each such server is attached to
//! its [`Warden`] as a server like its own (a server actor over a
//! connector that speaks NATS), so the registry, naming, policy,
//! approvals, profiles, the front, the bridge and the embedded handle
//! serve it unchanged. Policy applies where a call enters the cluster;
//! the node that runs it applies its server's settings and redacts its
//! own secrets before a result leaves it.
//!
//! ```no_run
//! # async fn join(warden: warden_actors::Warden, config: warden_actors::WardenConfig) -> Result<(), warden_cluster::ClusterError> {
//! if let Some(cluster) = warden_cluster::Cluster::join(&warden, &config).await? {
//!     // ... serve ...
//!     cluster.leave().await;
//! }
//! # Ok(()) }
//! ```
//!
//! The modules: `connect.rs` (NATS, from the config), `names.rs`
//! (subjects, buckets, keys), `buckets.rs` (the heartbeat and catalog
//! buckets), `wire.rs` (what nodes send each other), `announce.rs` (this
//! node's heartbeat and catalog), `serve.rs` and `runs.rs` (calls run here
//! for others, once per call id), `import.rs` (other nodes' servers
//! attached here), `remote.rs` and `remote/call.rs` (a remote server's
//! connection, and the failure table of one call), `view.rs` (what a node
//! knows of its cluster, for `status`), `approvals.rs` (calls waiting for a
//! person, listed and answered on every node), `questions.rs` (servers'
//! questions, the same way; both on `waiting.rs`), `audit.rs` (every
//! node's audit records in one stream), `asks.rs` (a remote server's
//! questions put to the caller on the entering node), `metrics.rs` (its series, by node
//! and server), `grants.rs` (grants given
//! on one node covering calls on all), `fronts.rs` (the sessions
//! of front replicas, kept in a bucket every node's front reads),
//! `updates.rs` (other nodes' subscriptions to this node's resources, and
//! what its servers announce, passed on). The design and the failure
//! table are in `docs/cluster.md`.

mod announce;
mod approvals;
mod asks;
mod audit;
mod buckets;
mod connect;
mod fronts;
mod grants;
mod import;
mod metrics;
mod names;
mod questions;
mod remote;
mod runs;
mod serve;
mod updates;
mod view;
mod waiting;
mod wire;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_nats::jetstream::{self, kv};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use warden_actors::{ApprovalQueue, ServerSettings, Warden};
use warden_config::{ClusterConfig, WardenConfig};

pub use audit::read as read_audit;
use buckets::{Buckets, HEARTBEAT_TTL};
use names::Names;
pub use questions::NotTaken;
pub use view::{ClusterView, NodeView, RemoteServerView};

/// How long joining waits to have read what the other nodes export.
const SYNC_LIMIT: Duration = Duration::from_secs(5);

/// Why a node could not join its cluster.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// NATS could not be reached.
    #[error("cannot connect to NATS at {urls}: {problem}")]
    Connect {
        /// The configured URLs.
        urls: String,
        /// What failed.
        problem: String,
    },
    /// A bucket could not be opened or made.
    #[error("cannot open the cluster's bucket '{bucket}': {problem}")]
    Bucket {
        /// Its name.
        bucket: String,
        /// What failed.
        problem: String,
    },
    /// A subscription failed.
    #[error("cannot subscribe to {subject}: {problem}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// What failed.
        problem: String,
    },
    /// Another live node has this node's name.
    #[error(
        "another node named '{0}' is in the cluster (its heartbeat is current); give this node its own name with \
         `node = \"...\"` in [cluster]"
    )]
    NodeTaken(String),
}

/// Which local servers are offered to the cluster: the configured servers
/// the `export` list names (`"*"`: every configured one). Never a server
/// attached from the cluster: a node does not offer again what it imports.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Exports(Vec<String>);

impl Exports {
    fn of(config: &WardenConfig) -> Exports {
        let Some(cluster) = &config.cluster else { return Exports::default() };
        Exports(config.servers.keys().filter(|server| cluster.exports(server)).cloned().collect())
    }

    /// The servers offered.
    pub(crate) fn names(&self) -> &[String] {
        &self.0
    }

    /// Whether `server` is offered.
    pub(crate) fn covers(&self, server: &str) -> bool {
        self.0.iter().any(|name| name == server)
    }
}

/// This node's membership of its cluster; [`Cluster::leave`] ends it.
pub struct Cluster {
    names: Arc<Names>,
    warden: Warden,
    client: async_nats::Client,
    buckets: Buckets,
    exports: Arc<watch::Sender<Exports>>,
    view: watch::Receiver<ClusterView>,
    /// The approvals and questions buckets, once they are shared.
    approvals: Option<(kv::Store, kv::Store)>,
    tasks: Vec<AbortHandle>,
}

impl Cluster {
    /// Joins the cluster the config's `[cluster]` describes (`None` without
    /// one): connects to NATS, opens (or makes) the buckets, starts the
    /// heartbeat, publishes the exported servers and answers their calls,
    /// and attaches the servers other nodes export (unless `import =
    /// false`), each with the config's call timeout. Fails when NATS cannot
    /// be reached or another live node has this node's name.
    pub async fn join(warden: &Warden, config: &WardenConfig) -> Result<Option<Cluster>, ClusterError> {
        let Some(cluster) = &config.cluster else { return Ok(None) };
        Cluster::join_with(warden, config, cluster).await.map(Some)
    }

    async fn join_with(warden: &Warden, whole: &WardenConfig, config: &ClusterConfig) -> Result<Cluster, ClusterError> {
        let client = connect::connect(config).await?;
        let names =
            Arc::new(Names::new(&config.subject_prefix, config.node_name()).replicated(connect::servers(&client)));
        let js = jetstream::new(client.clone());
        let buckets = Buckets::open(&js, &names).await?;
        wait_for_name(&buckets, &names.node).await?;
        let (exports, exported) = watch::channel(Exports::of(whole));
        let offered = exported.borrow().names().to_vec();
        let joined = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| since.as_secs());
        let beat = wire::Heartbeat {
            node: names.node.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            exports: offered.clone(),
            joined,
        };
        // The heartbeat tells the catalog to write itself again when it
        // comes back after NATS lost the buckets.
        let rewrite = Arc::new(tokio::sync::Notify::new());
        let heartbeat =
            announce::heartbeat(js.clone(), names.clone(), buckets.clone(), beat, exported.clone(), rewrite.clone());
        let catalog = announce::catalog(warden.clone(), names.clone(), buckets.clone(), exported.clone(), rewrite);
        let mut tasks = vec![tokio::spawn(heartbeat).abort_handle(), tokio::spawn(catalog).abort_handle()];
        // Grants given on any node cover calls on every node.
        let mirrors = Arc::new(grants::Mirrors::default());
        let store = buckets.grants.clone();
        let publish = grants::publish(warden.clone(), names.clone(), store.clone(), client.clone(), mirrors.clone());
        tasks.push(tokio::spawn(publish).abort_handle());
        tasks.push(tokio::spawn(grants::mirror(warden.clone(), names.clone(), store, mirrors)).abort_handle());
        tasks.push(tokio::spawn(grants::answer_revokes(client.clone(), names.clone(), warden.clone())).abort_handle());
        let metrics = warden.metrics().extension(metrics::ClusterMetrics::register);
        // Other nodes' subscriptions to these servers' resources, and what
        // the servers announce.
        let updates = Arc::new(updates::Updates::new(
            warden.clone(),
            client.clone(),
            names.clone(),
            exported.clone(),
            buckets.nodes.clone(),
        ));
        tasks.push(tokio::spawn(updates.clone().answer_holds()).abort_handle());
        tasks.push(tokio::spawn(updates.clone().publish_notices()).abort_handle());
        tasks.push(tokio::spawn(updates.prune()).abort_handle());
        let host = Arc::new(serve::Host {
            metrics: metrics.clone(),
            client: client.clone(),
            names: names.clone(),
            warden: warden.clone(),
            exports: exported,
            runs: Arc::default(),
        });
        tasks.push(
            tokio::spawn(async move {
                if let Err(error) = serve::serve(host).await {
                    tracing::error!("this node no longer answers calls from the cluster: {error}");
                }
            })
            .abort_handle(),
        );
        let (view_sender, view) = watch::channel(ClusterView {
            node: names.node.clone(),
            exports: offered.clone(),
            import: config.import,
            replicas: names.replicas,
            ..ClusterView::default()
        });
        if config.import {
            let settings = ServerSettings { call_timeout: whole.call_timeout(), ..ServerSettings::default() };
            // The questions of servers running this node's calls elsewhere
            // come back here, to those calls' callers.
            let routes = Arc::new(remote::AskRoutes::default());
            tasks.push(tokio::spawn(asks::answer(client.clone(), names.clone(), routes.clone())).abort_handle());
            let importer = import::Importer::new(
                warden.clone(),
                names.clone(),
                client.clone(),
                js,
                settings,
                view_sender,
                metrics,
                routes,
            );
            let (synced, sync) = tokio::sync::oneshot::channel();
            tasks.push(tokio::spawn(importer.run(buckets.clone(), synced)).abort_handle());
            // Joined means the others' servers are attached (starting).
            if tokio::time::timeout(SYNC_LIMIT, sync).await.is_err() {
                tracing::warn!(
                    "the cluster's servers were not all read within {SYNC_LIMIT:?}; they are attached as they come"
                );
            }
        }
        tracing::info!(node = %names.node, exports = ?offered, import = config.import, "joined the cluster");
        let exports = Arc::new(exports);
        Ok(Cluster { names, warden: warden.clone(), client, buckets, exports, view, approvals: None, tasks })
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.names.node
    }

    /// What this node knows of its cluster now (heartbeat ages as of now).
    pub fn view(&self) -> ClusterView {
        self.view.borrow().clone().aged()
    }

    /// Shares `queue` with the cluster: what waits in it is listed on every
    /// node, and answerable from every node ([`ClusterLink::approvals`],
    /// [`ClusterLink::decide`]); the queue stays the one place a decision
    /// is taken. Before [`Cluster::link`], whose handles see it.
    pub fn share_approvals(&mut self, queue: ApprovalQueue) {
        let (names, client) = (&self.names, &self.client);
        let store = self.buckets.approvals.clone();
        let publish = approvals::publish(queue.clone(), names.clone(), store.clone());
        self.tasks.push(tokio::spawn(publish).abort_handle());
        let answer = approvals::answer(client.clone(), names.clone(), queue.clone());
        self.tasks.push(tokio::spawn(answer).abort_handle());
        // Servers' questions wait in the same queue: shared the same way.
        let questions = questions::publish(queue.clone(), names.clone(), self.buckets.questions.clone());
        self.tasks.push(tokio::spawn(questions).abort_handle());
        self.tasks.push(tokio::spawn(questions::answer(client.clone(), names.clone(), queue)).abort_handle());
        self.approvals = Some((store, self.buckets.questions.clone()));
    }

    /// Where this node's audit records go besides its own file: the
    /// cluster's stream, which [`read_audit`] reads whole.
    pub async fn audit_sink(&self) -> Result<Arc<dyn warden_actors::AuditSink>, ClusterError> {
        audit::sink(self.names.clone(), self.client.clone()).await
    }

    /// The store this node's HTTP front shares its sessions through, as
    /// one of the cluster's front replicas ([`warden_front::replicas`]):
    /// behind a load balancer, a session made on one node's front goes on
    /// on any other's.
    pub async fn front_replicas(&self) -> Result<Arc<dyn warden_front::replicas::Replicas>, ClusterError> {
        let nodes = self.buckets.nodes.clone();
        Ok(Arc::new(fronts::NatsReplicas::open(self.names.clone(), self.client.clone(), nodes).await?))
    }

    /// A handle on this membership for the daemon's other parts: the view
    /// for `status`, the exports for a reload, the other nodes' approvals.
    pub fn link(&self) -> ClusterLink {
        ClusterLink {
            view: self.view.clone(),
            exports: self.exports.clone(),
            client: self.client.clone(),
            names: self.names.clone(),
            approvals: self.approvals.clone(),
        }
    }

    /// Leaves the cluster: stops answering calls, deletes this node's
    /// heartbeat and catalog entries (the others withdraw its servers at
    /// once) and its grants (the others end their mirrors), and detaches
    /// the servers it imported.
    pub async fn leave(self) {
        for task in &self.tasks {
            task.abort();
        }
        let servers = self.warden.status().into_iter().map(|status| status.name);
        announce::withdraw(&self.names, &self.buckets, servers).await;
        // Its grants end with it, as a daemon's grants always have.
        let mine = format!("{}.", self.names.node);
        for key in buckets::keys_of(&self.buckets.grants).await.into_iter().filter(|key| key.starts_with(&mine)) {
            let _ = self.buckets.grants.delete(&key).await;
        }
        for server in self.warden.attached_servers().await {
            self.warden.detach_server(&server).await;
        }
        let _ = self.client.flush().await;
        tracing::info!(node = %self.names.node, "left the cluster");
    }
}

/// A cloneable handle on a node's membership ([`Cluster::link`]).
#[derive(Clone)]
pub struct ClusterLink {
    view: watch::Receiver<ClusterView>,
    exports: Arc<watch::Sender<Exports>>,
    client: async_nats::Client,
    names: Arc<Names>,
    /// The approvals and questions buckets, once [`Cluster::share_approvals`] ran.
    approvals: Option<(kv::Store, kv::Store)>,
}

impl ClusterLink {
    /// What the node knows of its cluster now (heartbeat ages as of now).
    pub fn view(&self) -> ClusterView {
        self.view.borrow().clone().aged()
    }

    /// The calls waiting for a person on the other live nodes, each with
    /// its id as `NODE:ID` and its `node` (none before approvals are
    /// shared).
    pub async fn approvals(&self) -> Vec<serde_json::Value> {
        let Some((store, _)) = &self.approvals else { return Vec::new() };
        approvals::remote(store, &self.names, &self.live()).await
    }

    /// The servers' questions waiting on the other live nodes, each with
    /// its id as `NODE:ID` and its `node` (none before approvals are
    /// shared: they wait in the same queue).
    pub async fn questions(&self) -> Vec<serde_json::Value> {
        let Some((_, store)) = &self.approvals else { return Vec::new() };
        questions::remote(store, &self.names, &self.live()).await
    }

    /// Answers the question `NODE:ID` waiting on another node; that node's
    /// answer, or why it was not taken (it does not fit the form, it was
    /// answered already, the node left).
    pub async fn answer_question(
        &self,
        id: &str,
        action: warden_protocol::AnswerAction,
        content: Option<serde_json::Value>,
        by: &str,
    ) -> Result<serde_json::Value, NotTaken> {
        questions::answer_remote(&self.client, &self.names, id, action, content, by).await
    }

    fn live(&self) -> Vec<String> {
        self.view.borrow().nodes.iter().map(|node| node.name.clone()).collect()
    }

    /// Approves (with a `grant`, given there and shared with every node)
    /// or denies (with `reason`) the call `NODE:ID` waiting on another
    /// node; that node's answer, or why there is none (it was answered
    /// already, the node left).
    pub async fn decide(
        &self,
        id: &str,
        approve: bool,
        grant: Option<warden_actors::GrantRequest>,
        reason: Option<String>,
        by: &str,
    ) -> Result<serde_json::Value, String> {
        approvals::decide(&self.client, &self.names, id, approve, grant, reason, by).await
    }

    /// Applies a reloaded config: which servers it offers takes effect at
    /// once (the catalog, the heartbeat and the calls answered follow).
    /// Joining, leaving or changing NATS takes a restart: said in the log.
    pub fn apply(&self, config: &WardenConfig) {
        if config.cluster.is_none() {
            tracing::warn!("the reloaded config has no [cluster]; this node stays in its cluster until it restarts");
            return;
        }
        self.exports.send_if_modified(|exports| {
            let new = Exports::of(config);
            let changed = *exports != new;
            if changed {
                tracing::info!(exports = ?new.names(), "the servers offered to the cluster changed");
            }
            *exports = new;
            changed
        });
    }
}

/// Waits (at most a heartbeat's TTL and a second) for another node's
/// heartbeat under `node` to lapse: a node restarting after a crash finds
/// its old heartbeat still counting for up to the TTL.
async fn wait_for_name(buckets: &Buckets, node: &str) -> Result<(), ClusterError> {
    let deadline = tokio::time::Instant::now() + HEARTBEAT_TTL + Duration::from_secs(1);
    loop {
        let taken = matches!(
            buckets.nodes.entry(node).await,
            Ok(Some(entry)) if entry.operation == jetstream::kv::Operation::Put
        );
        if !taken {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ClusterError::NodeTaken(node.to_string()));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
