//! Helpers for the policy suites: an approver that hands every request to
//! the test, and a call answered by the scripted server.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use warden_actors::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, GrantRequest, Warden};
use warden_protocol::MemoryPeer;

use super::{next_request, reply, text_result, within};

pub(crate) type Asked = UnboundedReceiver<(ApprovalRequest, ApprovalAnswer)>;

/// Attaches an approver that hands every request to the test.
pub(crate) fn attach_channel(warden: &Warden) -> Asked {
    let (sender, asked) = unbounded_channel();
    warden.attach_approver(Arc::new(move |request: ApprovalRequest, answer: ApprovalAnswer| {
        let _ = sender.send((request, answer));
    }));
    asked
}

/// The next approval request.
pub(crate) async fn next_ask(asked: &mut Asked) -> (ApprovalRequest, ApprovalAnswer) {
    within("an approval request arrives", asked.recv()).await.expect("the approver is attached")
}

/// Runs `name` while playing a server that answers it with `text`.
pub(crate) async fn call_answered(warden: &Warden, peer: &mut MemoryPeer, name: &str, text: &str) -> String {
    let (outcome, ()) = tokio::join!(warden.call_tool(name, json!({})), async {
        let call = next_request(peer, "tools/call").await;
        reply(peer, &call, text_result(text));
    });
    outcome.expect("the call runs").text()
}

pub(crate) fn grant_all_of_srv() -> ApprovalDecision {
    ApprovalDecision::ApproveWithGrant(GrantRequest {
        tools: Some("srv__*".into()),
        duration: None,
        this_agent_only: false,
    })
}
