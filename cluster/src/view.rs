//! What a node knows of its cluster, for people: `warden cluster status`,
//! the cluster part of `warden status`, and which nodes serve each
//! remote server. The importer publishes it after every change it sees.

use std::time::Instant;

use serde::Serialize;

/// This node's view of its cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClusterView {
    /// This node's name.
    pub node: String,
    /// The servers this node offers (`"*"`: all).
    pub exports: Vec<String>,
    /// Whether it uses the other nodes' servers.
    pub import: bool,
    /// On how many NATS servers the cluster's buckets are kept (one per
    /// server of the NATS cluster, up to three).
    pub replicas: usize,
    /// The other live nodes, by name.
    pub nodes: Vec<NodeView>,
    /// The servers other nodes export, by name.
    pub servers: Vec<RemoteServerView>,
}

/// Another live node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeView {
    /// Its name.
    pub name: String,
    /// Its Warden version.
    pub version: String,
    /// What it exports.
    pub exports: Vec<String>,
    /// When this node last saw its heartbeat.
    #[serde(skip)]
    pub heard: Instant,
    /// How long ago, in seconds (when the view was taken).
    pub heartbeat_age_secs: f64,
}

/// A server other nodes export.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemoteServerView {
    /// Its name.
    pub name: String,
    /// The live nodes that serve it.
    pub nodes: Vec<String>,
    /// Whether it is attached here (`false`: a server of this node has its
    /// name, or importing is off).
    pub attached: bool,
}

impl ClusterView {
    /// The nodes that serve `server` here, if it is an attached remote one.
    pub fn nodes_of(&self, server: &str) -> Option<&[String]> {
        self.servers.iter().find(|view| view.name == server && view.attached).map(|view| view.nodes.as_slice())
    }

    /// The view with heartbeat ages as of now.
    pub fn aged(mut self) -> ClusterView {
        for node in &mut self.nodes {
            node.heartbeat_age_secs = node.heard.elapsed().as_secs_f64();
        }
        self
    }
}
