//! Approvals shared across the cluster: a call waiting for a person on one
//! node is listed, and answered, on every node.
//!
//! A call waits in the approval queue of the node it entered at (policy
//! applies where a call enters). That node publishes what its queue holds
//! in the bucket `PREFIX_approvals` (`NODE.ID` → the request, arguments
//! already redacted) and answers `PREFIX.approve.NODE` requests by handing
//! the decision to its queue (`waiting.rs`). The queue is the one place a
//! decision is taken: two people answering at once from two nodes get one
//! decision — the second is told the request is no longer waiting. Other
//! nodes list the entries of live nodes as `NODE:ID`.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use async_nats::Client;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use warden_actors::{ApprovalDecision, ApprovalQueue, GrantRequest};

use crate::names::Names;
use crate::waiting;

/// A decision sent to the node whose queue holds the call.
#[derive(Debug, Serialize, Deserialize)]
struct RemoteDecision {
    /// The request's number in that node's queue.
    id: u64,
    /// Approve (`true`) or deny.
    approve: bool,
    /// Why, when denied.
    #[serde(default)]
    reason: Option<String>,
    /// Who decided, and where.
    by: String,
    /// A grant with the approval: given on the node whose queue holds the
    /// call, and from there shared with every node (`grants.rs`).
    #[serde(default)]
    grant: Option<GrantWire>,
}

/// A [`GrantRequest`] as it travels.
#[derive(Debug, Serialize, Deserialize)]
struct GrantWire {
    tools: Option<String>,
    seconds: Option<f64>,
    this_agent_only: bool,
}

/// Keeps this node's entries in the bucket equal to what its queue holds,
/// until the task is aborted.
pub(crate) async fn publish(queue: ApprovalQueue, names: Arc<Names>, store: kv::Store) {
    waiting::publish(store, names.node.clone(), move || {
        let pending = queue.pending().into_iter();
        pending.map(|request| (request.id, serde_json::to_vec(&request).expect("a request serialises"))).collect()
    })
    .await;
}

/// Answers other nodes' decisions on this node's queue until the task is
/// aborted.
pub(crate) async fn answer(client: Client, names: Arc<Names>, queue: ApprovalQueue) {
    let node = names.node.clone();
    waiting::answer(client, names.approve(&names.node), move |decision: RemoteDecision| {
        let id = decision.id;
        let choice = match (decision.approve, decision.grant) {
            (true, None) => ApprovalDecision::Approve,
            (true, Some(grant)) => ApprovalDecision::ApproveWithGrant(GrantRequest {
                tools: grant.tools,
                duration: grant
                    .seconds
                    .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
                    .map(Duration::from_secs_f64),
                this_agent_only: grant.this_agent_only,
            }),
            (false, _) => {
                ApprovalDecision::Deny { reason: decision.reason.unwrap_or_else(|| "no reason given".into()) }
            }
        };
        let answered = match queue.answer(id, choice, &decision.by) {
            Ok(()) => json!({ "answered": id }),
            Err(error) => json!({ "error": format!("on node {node}: {error}") }),
        };
        std::future::ready(answered)
    })
    .await;
}

/// The calls waiting on the live nodes in `live`, each with its id as
/// `NODE:ID` and its `node`.
pub(crate) async fn remote(store: &kv::Store, names: &Names, live: &[String]) -> Vec<Value> {
    waiting::remote(store, names, live, "requested_at").await
}

/// Sends a decision on `NODE:ID` to that node; its answer, or why none.
pub(crate) async fn decide(
    client: &Client,
    names: &Names,
    id: &str,
    approve: bool,
    grant: Option<GrantRequest>,
    reason: Option<String>,
    by: &str,
) -> Result<Value, String> {
    let (node, number) = waiting::split_id(id, "an approval")?;
    let grant = grant.map(|grant| GrantWire {
        tools: grant.tools,
        seconds: grant.duration.map(|duration| duration.as_secs_f64()),
        this_agent_only: grant.this_agent_only,
    });
    let decision = RemoteDecision { id: number, approve, reason, by: format!("{by} on node {}", names.node), grant };
    waiting::send(client, names.approve(node), node, &decision).await
}
