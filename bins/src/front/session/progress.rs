//! A call's progress, passed to the client under the client's own token.

use serde_json::{json, Value};
use tokio::sync::mpsc;
use warden_actors::Progress;

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
