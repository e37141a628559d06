//! Approvals shared across the cluster: a call waiting for a person on one
//! node is listed, and answered, on every node.
//!
//! A call waits in the approval queue of the node it entered at (policy
//! applies where a call enters). That node publishes what its queue holds
//! in the bucket `PREFIX_approvals` (`NODE.ID` → the request, arguments
//! already redacted), checked every [`PUBLISH_EVERY`], and answers
//! `PREFIX.approve.NODE` requests by handing the decision to its queue.
//! The queue is the one place a decision is taken: two people answering at
//! once from two nodes get one decision — the second is told the request
//! is no longer waiting. Other nodes list the entries of live nodes as
//! `NODE:ID`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use async_nats::Client;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use warden_actors::{ApprovalDecision, ApprovalQueue, GrantRequest};

use crate::buckets::keys_of;
use crate::names::Names;

/// How often a node looks at its queue for what to publish.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// How long answering a remote approval may take.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

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
    let mine = format!("{}.", names.node);
    let mut written: HashMap<String, Vec<u8>> = HashMap::new();
    // What an earlier run of this node left is gone with its calls.
    let keys = keys_of(&store).await;
    written.extend(keys.into_iter().filter(|key| key.starts_with(&mine)).map(|key| (key, Vec::new())));
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let pending: HashMap<String, Vec<u8>> = queue
            .pending()
            .into_iter()
            .map(|request| {
                let key = format!("{mine}{}", request.id);
                (key, serde_json::to_vec(&request).expect("a request serialises"))
            })
            .collect();
        for (key, value) in &pending {
            if written.get(key) != Some(value) && store.put(key, value.clone().into()).await.is_ok() {
                written.insert(key.clone(), value.clone());
            }
        }
        let gone: Vec<String> = written.keys().filter(|key| !pending.contains_key(*key)).cloned().collect();
        for key in gone {
            if store.delete(&key).await.is_ok() {
                written.remove(&key);
            }
        }
    }
}

/// Answers other nodes' decisions on this node's queue until the task is
/// aborted.
pub(crate) async fn answer(client: Client, names: Arc<Names>, queue: ApprovalQueue) {
    let subject = names.approve(&names.node);
    let mut decisions = match client.subscribe(subject.clone()).await {
        Ok(decisions) => decisions,
        Err(error) => {
            tracing::error!("cannot subscribe to {subject}: {error}; other nodes cannot answer this node's approvals");
            return;
        }
    };
    while let Some(message) = decisions.next().await {
        let answer = match serde_json::from_slice::<RemoteDecision>(&message.payload) {
            Err(error) => json!({ "error": format!("node {} could not read the decision: {error}", names.node) }),
            Ok(decision) => {
                let id = decision.id;
                let choice = if decision.approve {
                    match decision.grant {
                        None => ApprovalDecision::Approve,
                        Some(grant) => ApprovalDecision::ApproveWithGrant(GrantRequest {
                            tools: grant.tools,
                            duration: grant
                                .seconds
                                .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
                                .map(Duration::from_secs_f64),
                            this_agent_only: grant.this_agent_only,
                        }),
                    }
                } else {
                    ApprovalDecision::Deny { reason: decision.reason.unwrap_or_else(|| "no reason given".into()) }
                };
                match queue.answer(id, choice, &decision.by) {
                    Ok(()) => json!({ "answered": id }),
                    Err(error) => json!({ "error": format!("on node {}: {error}", names.node) }),
                }
            }
        };
        if let Some(reply) = message.reply {
            let _ = client.publish(reply, answer.to_string().into()).await;
        }
    }
}

/// The calls waiting on the live nodes in `live`, each with its id as
/// `NODE:ID` and its `node`.
pub(crate) async fn remote(store: &kv::Store, names: &Names, live: &[String]) -> Vec<Value> {
    let mut found = Vec::new();
    for key in keys_of(store).await {
        let Some((node, _)) = Names::split_catalog_key(&key) else { continue };
        if node == names.node || !live.iter().any(|live| live == node) {
            continue;
        }
        let Ok(Some(entry)) = store.entry(&key).await else { continue };
        if entry.operation != kv::Operation::Put {
            continue;
        }
        if let Ok(mut request) = serde_json::from_slice::<Value>(&entry.value) {
            request["id"] = json!(format!("{node}:{}", request["id"]));
            request["node"] = json!(node);
            found.push(request);
        }
    }
    found.sort_by(|a, b| {
        a["requested_at"].as_f64().partial_cmp(&b["requested_at"].as_f64()).unwrap_or(std::cmp::Ordering::Equal)
    });
    found
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
    let Some((node, number)) = id.split_once(':') else {
        return Err(format!("'{id}' is not an approval of another node (those read NODE:NUMBER)"));
    };
    let number: u64 = number.parse().map_err(|_| format!("'{id}': the part after ':' must be a number"))?;
    let grant = grant.map(|grant| GrantWire {
        tools: grant.tools,
        seconds: grant.duration.map(|duration| duration.as_secs_f64()),
        this_agent_only: grant.this_agent_only,
    });
    let decision = RemoteDecision { id: number, approve, reason, by: format!("{by} on node {}", names.node), grant };
    let payload = serde_json::to_vec(&decision).expect("a decision serialises");
    let request = async_nats::Request::new().payload(payload.into()).timeout(Some(ANSWER_LIMIT));
    let reply = client
        .send_request(names.approve(node), request)
        .await
        .map_err(|error| format!("node {node} did not take the decision ({error}); is it still in the cluster?"))?;
    let answer: Value = serde_json::from_slice(&reply.payload)
        .map_err(|error| format!("node {node} answered something unreadable: {error}"))?;
    match answer.get("error").and_then(Value::as_str) {
        Some(error) => Err(error.to_string()),
        None => Ok(answer),
    }
}
