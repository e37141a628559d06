//! The daemon's approval queue, answered over the bridge.
//!
//! A call whose policy needs a person waits in an [`ApprovalQueue`] the
//! daemon attaches at start (unless the config names its own approver:
//! `security.approver = "auto"` or `"deny"`). `warden approvals` lists what
//! waits, from any terminal; `warden approve ID` (optionally with a grant)
//! or `warden deny ID` releases it. The waiting call is itself a request in
//! flight, so the daemon does not idle out under it; an approval nobody
//! answers ends as a denial after `security.approval_timeout_secs`.

use std::time::Duration;

use serde_json::{json, Value};
use warden_actors::{ApprovalDecision, ApprovalQueue, GrantRequest};
use warden_cluster::ClusterLink;
use warden_protocol::{BridgeError, BridgeErrorCode as Code, GrantSpec};

/// Who the log says decided.
const DECIDED_BY: &str = "a person over the bridge (warden approve/deny)";

/// `approvals`: what waits, oldest first.
pub(crate) fn list(queue: &ApprovalQueue) -> Value {
    json!({ "approvals": queue.pending() })
}

/// `approve`: releases one call, maybe with a grant.
pub(crate) fn approve(queue: &ApprovalQueue, id: &str, grant: Option<GrantSpec>) -> Result<Value, BridgeError> {
    let id = parse_id(id)?;
    let decision = match grant.map(grant_request).transpose()? {
        None => ApprovalDecision::Approve,
        Some(grant) => ApprovalDecision::ApproveWithGrant(grant),
    };
    answer(queue, id, decision)?;
    Ok(json!({ "approved": id }))
}

/// The grant `approve --grant` asks for.
fn grant_request(grant: GrantSpec) -> Result<GrantRequest, BridgeError> {
    let duration = match grant.minutes {
        None => None,
        Some(minutes) if minutes.is_finite() && minutes > 0.0 => Some(Duration::from_secs_f64(minutes * 60.0)),
        Some(minutes) => {
            let message = format!("a grant's `minutes` must be a positive number, not {minutes}");
            return Err(BridgeError::new(Code::INVALID_REQUEST, message));
        }
    };
    Ok(GrantRequest { tools: grant.tools, duration, this_agent_only: grant.this_agent_only })
}

/// `deny`: refuses one call, with a reason the caller reads.
pub(crate) fn deny(queue: &ApprovalQueue, id: &str, reason: Option<String>) -> Result<Value, BridgeError> {
    let id = parse_id(id)?;
    let reason = reason.unwrap_or_else(|| "no reason given".into());
    answer(queue, id, ApprovalDecision::Deny { reason })?;
    Ok(json!({ "denied": id }))
}

fn answer(queue: &ApprovalQueue, id: u64, decision: ApprovalDecision) -> Result<(), BridgeError> {
    queue
        .answer(id, decision, DECIDED_BY)
        .map_err(|error| BridgeError::new(Code::UNKNOWN_APPROVAL, crate::advice::queue_error(&error)))
}

/// `approvals` on a cluster node: its own queue, then the calls waiting on
/// the other live nodes (ids `NODE:ID`).
pub(crate) async fn list_with(queue: &ApprovalQueue, cluster: Option<&ClusterLink>) -> Value {
    let mut listed = list(queue);
    super::elsewhere::add_remote(&mut listed, cluster).await;
    listed
}

/// `approve` or `deny` of `NODE:ID`: the decision goes to that node, whose
/// queue takes it (one decision, however many people answer). `None` when
/// the id is this node's own.
pub(crate) async fn decide_remote(
    cluster: Option<&ClusterLink>,
    id: &str,
    approve: bool,
    grant: Option<GrantSpec>,
    reason: Option<String>,
) -> Option<Result<Value, BridgeError>> {
    let cluster = match super::elsewhere::cluster_for(cluster, id, "approval")? {
        Ok(cluster) => cluster,
        Err(error) => return Some(Err(error)),
    };
    // The grant is given on the call's node, and shared from there.
    let grant = match grant.map(grant_request).transpose() {
        Ok(grant) => grant,
        Err(error) => return Some(Err(error)),
    };
    let outcome = cluster.decide(id, approve, grant, reason, DECIDED_BY).await;
    Some(match outcome {
        Ok(_) if approve => Ok(json!({ "approved": id })),
        Ok(_) => Ok(json!({ "denied": id })),
        Err(message) => Err(BridgeError::new(Code::UNKNOWN_APPROVAL, message)),
    })
}

fn parse_id(id: &str) -> Result<u64, BridgeError> {
    id.trim_start_matches('#').parse().map_err(|_| {
        BridgeError::new(Code::INVALID_REQUEST, format!("'{id}' is not an approval id; `warden approvals` lists them"))
    })
}

/// The approver of a `call_tool` that asked for notices (`warden call`):
/// the call waits in the queue like any other, and the caller is told at
/// once which approval it waits for — so a person at a terminal is asked
/// in place, and a script sees on stderr the commands that answer it,
/// instead of a silent wait.
pub(crate) struct Noticing {
    pub(crate) queue: ApprovalQueue,
    pub(crate) notices: super::questions::Notices,
}

impl warden_actors::Approver for Noticing {
    fn request(&self, request: warden_actors::ApprovalRequest, answer: warden_actors::ApprovalAnswer) {
        let mut shown = serde_json::to_value(&request).unwrap_or_default();
        shown["kind"] = json!("approval");
        let notice = json!({"id": self.notices.id, "notice": shown});
        warden_actors::Approver::request(&self.queue, request, answer);
        // A caller that left has nobody to tell; the approval still waits.
        let _ = self.notices.lines.send(format!("{notice}\n"));
    }
}
