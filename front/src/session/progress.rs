//! What a call reports while it runs, passed to its client: progress
//! under the client's own token, and (2026-07-28) the call's own log
//! messages, on the request's stream.

use serde_json::{json, Value};
use tokio::sync::mpsc;
use warden_actors::{Progress, Warden};

use super::Outbox;

/// Passes a call's progress to the client under the client's own token,
/// until the call ends (its sink is dropped).
pub(super) async fn relay_progress(token: Value, mut updates: mpsc::Receiver<Progress>, reply: Outbox) {
    while let Some(progress) = updates.recv().await {
        let mut params = json!({"progressToken": token, "progress": progress.progress});
        if let Some(total) = progress.total {
            params["total"] = json!(total);
        }
        if let Some(message) = progress.message {
            params["message"] = json!(message);
        }
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params});
        if reply.send(notification).await.is_err() {
            return;
        }
    }
}

/// Passes the log messages of the call of `tool` to the client until the
/// call ends, the logger named after its server (`server/logger`) as the
/// front's other relayed messages are.
pub(super) async fn relay_logs(warden: Warden, tool: String, mut messages: mpsc::Receiver<Value>, reply: Outbox) {
    while let Some(mut params) = messages.recv().await {
        let Some(fields) = params.as_object_mut() else { continue };
        // Looked up now: the call may have waited for its server's start.
        let server = warden.snapshot().tool(&tool).map(|entry| entry.server.to_string());
        let logger = match (server, fields.get("logger").and_then(Value::as_str)) {
            (Some(server), Some(logger)) => Some(format!("{server}/{logger}")),
            (Some(server), None) => Some(server),
            (None, _) => None,
        };
        if let Some(logger) = logger {
            fields.insert("logger".into(), json!(logger));
        }
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params});
        if reply.send(notification).await.is_err() {
            return;
        }
    }
}
