//! The cluster's own series, in the Warden's one exposition (`/metrics`
//! of the daemon, or the host's registry): by node and remote server.
//!
//! - `warden_cluster_nodes`: the other live nodes, now.
//! - `warden_cluster_attempts_total{server,node,outcome}`: each attempt of
//!   a call this node sent to another: `answered` (a result or an error
//!   from the node), `refused` (it did not run there: tried elsewhere),
//!   `undelivered` (no responders), `unknown` (a lapsed heartbeat, a
//!   deadline, a lost connection).
//! - `warden_cluster_attempt_seconds{server,node}`: how long answered
//!   attempts took, the network and the other node included — set beside
//!   `warden_tool_call_duration_seconds` of the same server on its node.
//! - `warden_cluster_served_total{server,from,outcome}`: calls other nodes
//!   sent this node (`ok`, `error`, `refused`).
//!
//! A remote server is a server of the node like any other, so the per
//! server series (`warden_tool_calls_total{server=…}` …) count its calls
//! too.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Attempt {
    server: String,
    node: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerNode {
    server: String,
    node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Served {
    server: String,
    from: String,
    outcome: &'static str,
}

/// How an attempt on another node ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AttemptOutcome {
    Answered,
    Refused,
    Undelivered,
    Unknown,
}

/// The cluster's series.
pub(crate) struct ClusterMetrics {
    nodes: Gauge,
    attempts: Family<Attempt, Counter>,
    seconds: Family<ServerNode, Histogram>,
    served: Family<Served, Counter>,
}

impl ClusterMetrics {
    /// The series, registered on `registry` (the Warden's).
    pub(crate) fn register(registry: &mut Registry) -> ClusterMetrics {
        let nodes = Gauge::default();
        registry.register("cluster_nodes", "Other live nodes of this node's cluster", nodes.clone());
        let attempts = Family::default();
        registry.register(
            "cluster_attempts",
            "Attempts of calls sent to other nodes, by server, node and outcome",
            attempts.clone(),
        );
        let seconds = Family::<ServerNode, Histogram>::new_with_constructor(|| {
            Histogram::new([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0])
        });
        registry.register(
            "cluster_attempt_seconds",
            "How long answered attempts on other nodes took, by server and node",
            seconds.clone(),
        );
        let served = Family::default();
        registry.register(
            "cluster_served",
            "Calls other nodes sent this node, by server, node and outcome",
            served.clone(),
        );
        ClusterMetrics { nodes, attempts, seconds, served }
    }

    pub(crate) fn live_nodes(&self, count: usize) {
        self.nodes.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    pub(crate) fn attempt(&self, server: &str, node: &str, outcome: AttemptOutcome, took: std::time::Duration) {
        let outcome_label = match outcome {
            AttemptOutcome::Answered => "answered",
            AttemptOutcome::Refused => "refused",
            AttemptOutcome::Undelivered => "undelivered",
            AttemptOutcome::Unknown => "unknown",
        };
        let labels = Attempt { server: server.to_string(), node: node.to_string(), outcome: outcome_label };
        self.attempts.get_or_create(&labels).inc();
        if matches!(outcome, AttemptOutcome::Answered) {
            let labels = ServerNode { server: server.to_string(), node: node.to_string() };
            self.seconds.get_or_create(&labels).observe(took.as_secs_f64());
        }
    }

    pub(crate) fn served(&self, server: &str, from: &str, outcome: &'static str) {
        self.served.get_or_create(&Served { server: server.to_string(), from: from.to_string(), outcome }).inc();
    }
}
