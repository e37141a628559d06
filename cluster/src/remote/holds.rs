//! A remote server's resource subscriptions, as its connection here keeps
//! them (the serving side is `updates.rs`).
//!
//! The server actor's `resources/subscribe` is taken to **every** node
//! that serves the server — any replica's copy may be the one whose
//! resource changes — and answered once one of them holds it; a node that
//! starts serving the server later is asked too. What the serving nodes
//! publish for the server (`PREFIX.notice.SERVER`) comes in here: an
//! update of a URI this connection holds, and resource and prompt list
//! changes, are told the actor as if the server had said them, and reach
//! the front's clients the way a local server's do. A restarted actor
//! subscribes again through its new connection (Warden holds the
//! subscriptions: `Warden::hold_resource`); a node that stops serving it
//! lets go of this node's subscriptions when its heartbeat is gone.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{json, Value};
use warden_protocol::{ErrorCode, ErrorObject, Message, RequestId, TransportEvent};

use super::{Link, RemoteServer};
use crate::wire::{CallReply, Hold, Notice};

/// How long a node has to take a subscription.
const HOLD_WAIT: Duration = Duration::from_secs(5);

/// Takes the actor's `resources/subscribe` (or `unsubscribe`) request `id`
/// to the nodes that serve the server, and answers it.
pub(super) fn start(link: &Arc<Link>, id: RequestId, subscribe: bool, params: Option<Value>) {
    let link = link.clone();
    tokio::spawn(async move {
        let uri = params.as_ref().and_then(|params| params["uri"].as_str()).map(str::to_string);
        let Some(uri) = uri else {
            let error = ErrorObject::new(ErrorCode::INVALID_PARAMS, "needs `uri`, the resource's URI");
            return link.answer(id, Err(error));
        };
        if !subscribe {
            link.subscribed().remove(&uri);
        }
        let nodes = link.server.serving().nodes;
        if nodes.is_empty() {
            let message = format!("no node serves '{}' right now: the subscription was not made", link.server.name);
            return link.answer(id, Err(ErrorObject::new(ErrorCode::CLUSTER_CALL_FAILED, message)));
        }
        let asked = nodes.iter().map(|node| hold(&link.server, node, &uri, subscribe));
        let answers = futures_util::future::join_all(asked).await;
        let refusals: Vec<String> = answers.into_iter().filter_map(Result::err).collect();
        if refusals.len() == nodes.len() {
            let message = format!(
                "no node serving '{}' took the {}: {}",
                link.server.name,
                if subscribe { "subscription" } else { "unsubscription" },
                refusals.join("; ")
            );
            return link.answer(id, Err(ErrorObject::new(ErrorCode::CLUSTER_CALL_FAILED, message)));
        }
        if subscribe {
            link.subscribed().insert(uri);
        }
        link.answer(id, Ok(json!({})));
    });
}

/// Asks the nodes that started serving the server to hold what this
/// connection holds.
pub(super) fn hold_on(link: &Arc<Link>, nodes: Vec<String>) {
    let uris: Vec<String> = link.subscribed().iter().cloned().collect();
    if uris.is_empty() || nodes.is_empty() {
        return;
    }
    let server = link.server.clone();
    tokio::spawn(async move {
        for node in &nodes {
            for uri in &uris {
                if let Err(refusal) = hold(&server, node, uri, true).await {
                    tracing::warn!(server = %server.name, "subscribing to '{uri}' on a node that now serves it: {refusal}");
                }
            }
        }
    });
}

/// Asks `node` to hold (or let go of) `uri`; why not, when it did not.
async fn hold(server: &RemoteServer, node: &str, uri: &str, subscribe: bool) -> Result<(), String> {
    let hold = Hold { server: server.name.clone(), uri: uri.to_string(), node: server.names.node.clone(), subscribe };
    let payload = serde_json::to_vec(&hold).expect("a hold serialises");
    let request = async_nats::Request::new().payload(payload.into()).timeout(Some(HOLD_WAIT));
    match server.client.send_request(server.names.holds(node), request).await {
        Ok(reply) => match serde_json::from_slice::<CallReply>(&reply.payload) {
            Ok(CallReply::Result(_)) => Ok(()),
            Ok(CallReply::Error { message, .. }) => Err(format!("node {node}: {message}")),
            Err(problem) => Err(format!("node {node} answered something that is not a reply: {problem}")),
        },
        Err(error) => Err(format!("node {node} did not answer ({error})")),
    }
}

/// Tells the actor what the serving nodes publish for the server, until
/// the connection closes.
pub(super) async fn hear_notices(link: Arc<Link>) {
    let subject = link.server.names.notices(&link.server.name);
    let Ok(mut notices) = link.server.client.subscribe(subject.clone()).await else {
        return tracing::error!(server = %link.server.name, "cannot subscribe to {subject}: the server's resource updates and list changes are not heard here");
    };
    while let Some(message) = notices.next().await {
        let Ok(notice) = serde_json::from_slice::<Notice>(&message.payload) else {
            tracing::debug!(subject = %message.subject, "a notice that does not decode was ignored");
            continue;
        };
        let params = match (notice.method.as_str(), notice.uri) {
            ("notifications/resources/updated", Some(uri)) if link.subscribed().contains(&uri) => {
                Some(json!({ "uri": uri }))
            }
            ("notifications/resources/list_changed" | "notifications/prompts/list_changed", _) => None,
            _ => continue,
        };
        (link.sink)(TransportEvent::Message(Message::notification(&notice.method, params)));
    }
}
