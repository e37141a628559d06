//! `subscriptions/listen` (MCP 2026-07-28): a request whose answer is a
//! stream of the list changes the client asked for, for as long as it
//! keeps the request open.
//!
//! The front acknowledges first (`notifications/subscriptions/acknowledged`,
//! with the part of the filter it honours), then sends each change of the
//! lists the client's view sees — its tools (a server came up, restarted
//! with other tools, announced a change, was reloaded away), and the
//! servers offering resources or prompts, plus those servers' own
//! resource and prompt list changes — every one tagged with the request's
//! id as `io.modelcontextprotocol/subscriptionId`. The client ends it by
//! closing the stream (HTTP) or cancelling the request (stdio); Warden
//! shutting down ends it with a result. Resource subscriptions
//! (`resourceSubscriptions`) are not honoured yet, so the acknowledgement
//! leaves them out, as the revision says a server does.

use serde_json::{json, Map, Value};
use tokio::sync::broadcast::error::RecvError;
use warden_protocol::{ErrorCode, ErrorObject, SUBSCRIPTION_ID_KEY};

use super::super::notifier::lists_changed;
use super::{Outbox, Session};

/// The list changes a client may ask for, as the filter and the
/// notification name them.
const KINDS: [(&str, &str); 3] = [
    ("toolsListChanged", "notifications/tools/list_changed"),
    ("resourcesListChanged", "notifications/resources/list_changed"),
    ("promptsListChanged", "notifications/prompts/list_changed"),
];

impl Session {
    pub(super) async fn listen(&self, id: &Value, params: &Value, reply: &Outbox) -> Result<Value, ErrorObject> {
        let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "subscriptions/listen needs `notifications`: an object such as {\"toolsListChanged\": true}",
            ));
        };
        let wanted: Vec<&str> = KINDS
            .iter()
            .filter(|(key, _)| filter.get(*key).and_then(Value::as_bool) == Some(true))
            .map(|(_, method)| *method)
            .collect();
        let mut honoured = Map::new();
        for (key, method) in KINDS {
            if wanted.contains(&method) {
                honoured.insert(key.into(), json!(true));
            }
        }
        let tag = json!({ SUBSCRIPTION_ID_KEY: id });
        let tagged = |method: &str| json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": tag}});
        let honoured = Value::Object(honoured);
        tracing::info!(session = %self.who(), filter = %honoured, "a 2026-07-28 client listens for list changes");
        let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                         "params": {"_meta": tag, "notifications": honoured}});
        if reply.send(ack).await.is_err() {
            return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the client left"));
        }
        let warden = self.inner.front.warden.clone();
        let mut snapshots = warden.snapshot_changes();
        let mut notices = warden.notices();
        let mut seen = self.seen(&snapshots.current());
        loop {
            let methods: Vec<&'static str> = tokio::select! {
                snapshot = snapshots.changed() => {
                    let Some(snapshot) = snapshot else { break };
                    let now = self.seen(&snapshot);
                    let changed = lists_changed(&seen, &now);
                    seen = now;
                    changed
                }
                notice = notices.recv() => match notice {
                    Ok(notice) if self.inner.view.sees_server(&notice.server) => {
                        KINDS.iter().map(|(_, method)| *method).filter(|method| *method == notice.method).collect()
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => break,
                },
                _ = reply.closed() => return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the client left")),
            };
            for method in methods.into_iter().filter(|method| wanted.contains(method)) {
                if reply.send(tagged(method)).await.is_err() {
                    return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the client left"));
                }
            }
        }
        // Warden is shutting down: the subscription ends gracefully.
        Ok(json!({ "_meta": tag }))
    }
}
