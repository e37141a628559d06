//! What a session is told without asking: list changes, log messages and
//! resource updates.
//!
//! One task per session watches two things:
//!
//! - every snapshot Warden publishes: when the tools the session sees
//!   change (a server came up, restarted with other tools, announced a
//!   change, was added or removed by a reload, failed), it sends
//!   `notifications/tools/list_changed`; when the set of running servers
//!   offering resources or prompts changes, the matching `list_changed`.
//!   A failed server takes only its own tools with it.
//! - the servers' notices: `notifications/message` at or above the level
//!   the session set (none before it sets one), tagged with the server's
//!   name as `logger`; `notifications/resources/updated` for the resources
//!   this session subscribed to, URI mapped; the servers' own resource and
//!   prompt `list_changed`.
//!
//! - a server of its view that starts waiting for an OAuth login: a
//!   `notifications/message` (warning, logger `warden`) naming the command
//!   that ends the wait — sent even before the client sets a level, since
//!   a client cannot otherwise tell why that server's tools are absent.
//!
//! The task ends when the session's outbox closes or Warden shuts down.

use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use warden_actors::{ServerNotice, ServerState, Snapshot};

use super::session::{Outbox, Session};
use super::{uris, LogLevel};

/// How often a session not yet initialized checks whether it is, to catch
/// up on what changed meanwhile.
const CATCH_UP_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// What the session's lists looked like last time.
#[derive(PartialEq)]
pub(super) struct Seen {
    tools: Vec<Value>,
    resources: Vec<String>,
    prompts: Vec<String>,
    /// The servers it sees that wait for a login.
    needs_login: Vec<String>,
}

impl Session {
    /// Runs the session's notifier until `out` closes.
    ///
    /// What the session sees is taken here, before the session reads its
    /// first request. Taken in the task, on a busy machine it could come
    /// after `initialize` was answered: a server that came to need a login
    /// in between was then already "seen", and its warning never sent.
    pub(crate) fn spawn_notifier(&self, out: Outbox) -> tokio::task::JoinHandle<()> {
        let session = self.clone();
        let warden = &self.inner.front.warden;
        let (snapshots, notices) = (warden.snapshot_changes(), warden.notices());
        let seen = self.seen(&snapshots.current());
        tokio::spawn(async move { session.notify(out, snapshots, notices, seen).await })
    }

    async fn notify(
        self,
        out: Outbox,
        mut snapshots: warden_actors::Changes<std::sync::Arc<Snapshot>>,
        mut notices: tokio::sync::broadcast::Receiver<ServerNotice>,
        mut seen: Seen,
    ) {
        // Until the client has initialized nothing is sent, and `seen` is
        // left as it was: what changed meanwhile (a server that came to
        // need a login while `initialize` was answered) is caught up on
        // right after, not lost.
        let mut initialized = self.version().is_some();
        loop {
            let message = tokio::select! {
                snapshot = snapshots.changed() => {
                    let Some(snapshot) = snapshot else { return };
                    if !self.catch_up(&mut seen, &snapshot, &out).await {
                        return;
                    }
                    continue;
                }
                _ = tokio::time::sleep(CATCH_UP_POLL), if !initialized => {
                    initialized = self.version().is_some();
                    if initialized && !self.catch_up(&mut seen, &snapshots.current(), &out).await {
                        return;
                    }
                    continue;
                }
                notice = notices.recv() => match notice {
                    Ok(notice) => self.relayed(notice),
                    Err(RecvError::Lagged(lost)) => {
                        tracing::warn!(session = %self.who(), "{lost} server notifications were not relayed: the client read too slowly");
                        continue;
                    }
                    Err(RecvError::Closed) => return,
                },
                // A find added tools to this session's list.
                () = self.inner.found.changed.notified() => {
                    if !self.catch_up(&mut seen, &snapshots.current(), &out).await {
                        return;
                    }
                    continue;
                }
                _ = out.closed() => return,
            };
            if let Some(message) = message {
                if out.send(message).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Sends what changed since `seen` (once the client has initialized)
    /// and remembers it; false when the session is gone.
    async fn catch_up(&self, seen: &mut Seen, snapshot: &Snapshot, out: &Outbox) -> bool {
        if self.version().is_none() {
            return true;
        }
        let now = self.seen(snapshot);
        let changed = lists_changed(seen, &now);
        let newly: Vec<String> =
            now.needs_login.iter().filter(|name| !seen.needs_login.contains(name)).cloned().collect();
        *seen = now;
        let mut messages: Vec<Value> =
            changed.into_iter().map(|method| json!({"jsonrpc": "2.0", "method": method})).collect();
        messages.extend(newly.iter().filter_map(|server| self.needs_login_message(server)));
        for message in messages {
            if out.send(message).await.is_err() {
                return false;
            }
        }
        true
    }

    pub(super) fn seen(&self, snapshot: &Snapshot) -> Seen {
        let view = &self.inner.view;
        Seen {
            tools: self.listed_tools().unwrap_or_default(),
            resources: view.servers_offering(snapshot, |offers| offers.resources),
            prompts: view.servers_offering(snapshot, |offers| offers.prompts),
            needs_login: snapshot
                .statuses()
                .into_iter()
                .filter(|status| view.sees_server(&status.name))
                .filter(|status| matches!(status.state, ServerState::NeedsLogin { .. }))
                .map(|status| status.name)
                .collect(),
        }
    }

    /// The warning that `server` waits for a login, unless the client
    /// asked for errors only.
    fn needs_login_message(&self, server: &str) -> Option<Value> {
        if self.state().level.is_some_and(|level| level > LogLevel::Warning) {
            return None;
        }
        let needs = self.inner.front.needs_login(server);
        let data = format!("server '{server}' {needs}; its tools are absent until then");
        Some(json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "warning", "logger": "warden", "data": data}}))
    }

    /// The notification to pass on for `notice`, if this session wants it.
    fn relayed(&self, notice: ServerNotice) -> Option<Value> {
        let view = &self.inner.view;
        if !view.sees_server(&notice.server) || self.version().is_none() {
            return None;
        }
        let mut params = notice.params.unwrap_or_else(|| json!({}));
        match notice.method.as_str() {
            "notifications/message" => {
                let wanted = self.state().level?;
                if LogLevel::of(Some(&params)) < wanted {
                    return None;
                }
                let logger = match params.get("logger").and_then(Value::as_str) {
                    Some(logger) => format!("{}/{logger}", notice.server),
                    None => notice.server.to_string(),
                };
                params["logger"] = json!(logger);
            }
            "notifications/resources/updated" => {
                let uri = params.get("uri").and_then(Value::as_str)?.to_string();
                if !self.state().subscriptions.contains(&(notice.server.to_string(), uri.clone())) {
                    return None;
                }
                if view.server.is_none() {
                    params["uri"] = json!(uris::to_client(&notice.server, &uri));
                }
            }
            _ => {}
        }
        Some(json!({"jsonrpc": "2.0", "method": notice.method, "params": params}))
    }
}

/// The `list_changed` notifications that tell a client what differs.
pub(super) fn lists_changed(before: &Seen, now: &Seen) -> Vec<&'static str> {
    let mut methods = Vec::new();
    if before.tools != now.tools {
        methods.push("notifications/tools/list_changed");
    }
    if before.resources != now.resources {
        methods.push("notifications/resources/list_changed");
    }
    if before.prompts != now.prompts {
        methods.push("notifications/prompts/list_changed");
    }
    methods
}
