//! The cluster's two key-value buckets, made on first use by whichever
//! node comes first, and made again when NATS lost them (a restart of a
//! NATS server without persistence).
//!
//! - **nodes**: each node's heartbeat under its name, put with a TTL
//!   ([`HEARTBEAT_TTL`]) every [`HEARTBEAT_EVERY`]. The bucket has *limit
//!   markers*: when a key's TTL runs out, NATS deletes it *and tells the
//!   watchers* (a purge marker) — without markers a key expires silently.
//!   A node that leaves deletes its key itself, which watchers see at once.
//! - **approvals**: `NODE.ID` → a call waiting for a person on that node
//!   (`approvals.rs`), written by the node whose queue holds it.
//! - **grants**: `NODE.ID` → a grant that node gave (`grants.rs`).
//! - **questions**: `NODE.ID` → a server's question waiting in that node's
//!   queue (`questions.rs`).
//! - **catalog**: `NODE.SERVER` → what that server offers. No TTL: an
//!   entry counts only while its node's heartbeat does, and a node rewrites
//!   its entries on every change and every [`CATALOG_REFRESH`].
//!
//! All live in memory: everything in them is rewritten by the nodes
//! within seconds, so a NATS restart costs nothing a disk would save. In a
//! NATS cluster each has a copy on up to three servers
//! ([`Names::replicas`]), so any one server may die.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream::StorageType};
use futures_util::StreamExt as _;

use crate::names::Names;
use crate::ClusterError;

/// How long a heartbeat counts. A node whose heartbeat lapsed is gone to
/// the others: its servers are withdrawn. NATS' purge marker arrives
/// about this long after the last heartbeat (the minimum TTL is 1 s).
pub(crate) const HEARTBEAT_TTL: Duration = Duration::from_secs(2);

/// How often a node puts its heartbeat: four times a TTL, so a lost put or
/// a slow moment never lets it lapse.
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_millis(500);

/// How often a node writes its catalog entries again though nothing
/// changed (they come back this fast after NATS lost them).
pub(crate) const CATALOG_REFRESH: Duration = Duration::from_secs(5);

/// The cluster's buckets.
#[derive(Clone)]
pub(crate) struct Buckets {
    pub(crate) nodes: kv::Store,
    pub(crate) catalog: kv::Store,
    pub(crate) approvals: kv::Store,
    pub(crate) grants: kv::Store,
    pub(crate) questions: kv::Store,
}

impl Buckets {
    /// Opens the buckets, making them when they do not exist.
    pub(crate) async fn open(js: &jetstream::Context, names: &Names) -> Result<Buckets, ClusterError> {
        let nodes = kv::Config {
            bucket: names.nodes_bucket(),
            description: "Warden nodes: heartbeats with a TTL".into(),
            history: 1,
            storage: StorageType::Memory,
            // The markers themselves need not last long: watchers see them
            // as they are written.
            limit_markers: Some(Duration::from_secs(1)),
            num_replicas: names.replicas,
            ..Default::default()
        };
        let kept = |bucket: String, description: &str| kv::Config {
            bucket,
            description: description.into(),
            history: 1,
            storage: StorageType::Memory,
            num_replicas: names.replicas,
            ..Default::default()
        };
        let catalog = kept(names.catalog_bucket(), "Warden nodes: what each node's exported servers offer");
        let approvals = kept(names.approvals_bucket(), "Warden nodes: calls waiting for a person");
        let open = |config: kv::Config| async move {
            let bucket = config.bucket.clone();
            js.create_or_update_key_value(config).await.map_err(|error| ClusterError::Bucket {
                bucket,
                problem: format!(
                    "{error}; the cluster needs JetStream (nats-server -js) of version 2.11 or later, for \
                     per-key TTLs"
                ),
            })
        };
        let grants = kept(names.grants_bucket(), "Warden nodes: grants, each covering calls on every node");
        Ok(Buckets {
            nodes: open(nodes).await?,
            catalog: open(catalog).await?,
            approvals: open(approvals).await?,
            grants: open(grants).await?,
            questions: open(kept(names.questions_bucket(), "Warden nodes: servers' questions waiting for a person"))
                .await?,
        })
    }
}

/// Every key of `store` now (none when it cannot be read).
pub(crate) async fn keys_of(store: &kv::Store) -> Vec<String> {
    match store.keys().await {
        Ok(keys) => keys.filter_map(|key| async move { key.ok() }).collect().await,
        Err(_) => Vec::new(),
    }
}
