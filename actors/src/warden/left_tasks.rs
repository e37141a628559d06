//! Tasks an earlier process left (`task_journal.rs`): listed, asked
//! about, and their results fetched.
//!
//! Asked as the host (no agent's allowlist applies: the daemon's bridge
//! token is the user's), through the same path as a front's resource
//! reads, policed for secrets — after waiting for the server's first
//! start, which a freshly spawned daemon is still in.

use serde_json::{json, Value};

use super::Warden;
use crate::call::forward::ServerRequest;
use crate::error::CallError;
use crate::task_journal::LeftTask;

impl Warden {
    /// The tasks an earlier process's calls started on servers that
    /// outlive it (HTTP), by key, oldest key first.
    pub fn left_tasks(&self) -> Vec<(String, LeftTask)> {
        self.core.task_journal.left()
    }

    /// What the server says now of the left task `key`: `{"status": …}`
    /// (and `statusMessage` when it gave one), with its `result` — or the
    /// `error` it ended with — once it has ended; the task is forgotten
    /// then. A server that no longer knows the task answers with an error.
    pub async fn fetch_left_task(&self, key: &str) -> Result<Value, CallError> {
        let (task, state, mut answer) = self.ask_left_task(key).await?;
        let status = answer["status"].as_str().unwrap_or_default().to_string();
        let ended = matches!(status.as_str(), "completed" | "failed" | "cancelled");
        let path = &self.core.path;
        let asked = json!({"taskId": task.task_id});
        if task.extension {
            // The extension's `tasks/get` carries the end itself.
            for field in ["result", "error"] {
                if let Some(value) = state.get(field) {
                    answer[field] = value.clone();
                }
            }
        } else if matches!(status.as_str(), "completed" | "failed") {
            match path.forward(None, &task.server, ServerRequest::TaskResult, asked, None).await {
                Ok(result) => answer["result"] = result,
                Err(CallError::Server { code, message, .. }) => {
                    answer["error"] = json!({"code": code, "message": message})
                }
                Err(other) => return Err(other),
            }
        }
        if ended {
            self.core.task_journal.forget(key);
        }
        Ok(answer)
    }

    /// What the server says now of the left task `key` — its `status` (and
    /// `statusMessage`) — without fetching its result or forgetting it.
    pub async fn peek_left_task(&self, key: &str) -> Result<Value, CallError> {
        Ok(self.ask_left_task(key).await?.2)
    }

    /// The task, the server's `tasks/get` answer, and its status as told.
    async fn ask_left_task(&self, key: &str) -> Result<(LeftTask, Value, Value), CallError> {
        let found = self.left_tasks().into_iter().find(|(left, _)| left == key);
        let Some((_, task)) = found else { return Err(CallError::UnknownTask { key: key.to_string() }) };
        // A daemon that has just started (the one `warden tasks` spawned)
        // asks a server still on its first start: wait for it, within the
        // server's call timeout, rather than answer "retry in a moment".
        let timeout = self.core.path.slots.borrow().get(&task.server).map(|slot| slot.settings.call_timeout);
        let wait = timeout.unwrap_or(warden_config::DEFAULT_CALL_TIMEOUT);
        let _ = tokio::time::timeout(wait, self.wait_for(|now| now.is_server_settled(&task.server))).await;
        let asked = json!({"taskId": task.task_id});
        let state = self.core.path.forward(None, &task.server, ServerRequest::TaskStatus, asked, None).await?;
        let status = state.get("status").and_then(Value::as_str).unwrap_or("unknown");
        let mut told = json!({"status": status});
        if let Some(message) = state.get("statusMessage") {
            told["statusMessage"] = message.clone();
        }
        Ok((task, state, told))
    }
}
