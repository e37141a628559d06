//! What waits for a person on another node of the daemon's cluster: the
//! approvals and questions listed with ids `NODE:ID`, and the node an
//! answer to one of them goes to.

use serde_json::Value;
use warden_cluster::ClusterLink;
use warden_protocol::{BridgeError, BridgeErrorCode as Code};

/// The cluster an answer to `id` goes through, when `id` names another
/// node's `what` (`approval`, `question`): `None` for this node's own; an
/// error when the daemon is in no cluster.
pub(crate) fn cluster_for<'a>(
    cluster: Option<&'a ClusterLink>,
    id: &str,
    what: &str,
) -> Option<Result<&'a ClusterLink, BridgeError>> {
    if !id.contains(':') {
        return None;
    }
    Some(cluster.ok_or_else(|| {
        let message = format!("'{id}' names another node's {what}, and this daemon is not in a cluster");
        BridgeError::new(Code::INVALID_REQUEST, message)
    }))
}

/// Adds to `listed` (`approvals`, and `questions` when it has them) what
/// waits on the other live nodes.
pub(crate) async fn add_remote(listed: &mut Value, cluster: Option<&ClusterLink>) {
    let Some(cluster) = cluster else { return };
    if let Some(approvals) = listed["approvals"].as_array_mut() {
        approvals.extend(cluster.approvals().await);
    }
    if let Some(questions) = listed["questions"].as_array_mut() {
        questions.extend(cluster.questions().await);
    }
}
