//! What a server says that is not an answer: its notifications and its
//! requests to Warden.
//!
//! `tools/list_changed` is the actor's own business (it re-lists), and
//! progress goes to the call it belongs to. Log messages are logged, and —
//! with resource updates and resource or prompt list changes — published
//! as [`ServerNotice`]s on a broadcast channel every server of one Warden
//! shares: the MCP front relays them to the sessions that asked for them.
//! Nobody listening costs nothing but the send. A listener that falls
//! behind loses the oldest notices (broadcast's lag), never blocks a
//! server.
//!
//! Server → client requests are `asks.rs`'s.

use std::sync::Arc;

use serde_json::{json, Value};
use warden_protocol::{Notification, RequestId};

use super::{era, Pending, ServerActorState};

/// How many notices wait for a slow listener before the oldest are lost.
pub(crate) const NOTICE_BACKLOG: usize = 1024;

/// A notification a server sent that listeners may relay.
#[derive(Debug, Clone)]
pub struct ServerNotice {
    /// The server's configured name.
    pub server: Arc<str>,
    /// The method: `notifications/message`, `notifications/resources/updated`,
    /// `notifications/resources/list_changed`, `notifications/prompts/list_changed`.
    pub method: String,
    /// Its params as the server wrote them.
    pub params: Option<Value>,
}

/// Where a Warden's servers publish their notices.
pub(crate) type NoticeSender = tokio::sync::broadcast::Sender<ServerNotice>;

/// The notifications published for listeners.
const RELAYED: [&str; 4] = [
    "notifications/message",
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
];

impl ServerActorState {
    /// A notification from the server; `during`: the request whose stream
    /// carried it (Streamable HTTP).
    pub(super) fn receive_notification(&mut self, notification: Notification, during: Option<&RequestId>) {
        self.cache.notified(&notification.method, notification.params.as_ref());
        match notification.method.as_str() {
            "notifications/tools/list_changed" => return self.refresh_tools(),
            "notifications/progress" => return self.forward_progress(notification.params),
            "notifications/message" => {
                self.log_server_message(notification.params.as_ref());
                if let Some(logs) = self.log_owner(during) {
                    logs.offer(notification.params.clone().unwrap_or_else(|| json!({})));
                    if !self.logs_for_everyone() {
                        return;
                    }
                }
            }
            "notifications/cancelled" => return self.server_cancelled(notification.params.as_ref()),
            "notifications/elicitation/complete" => {
                // Warden calls again as soon as the person accepted the URL;
                // the server's word that the flow ended is for the log.
                let id = notification.params.as_ref().and_then(|params| params.get("elicitationId")).cloned();
                return tracing::info!(server = %self.name, elicitation = ?id, "the server says a URL elicitation is complete");
            }
            method if RELAYED.contains(&method) => {}
            method => return tracing::trace!(server = %self.name, method, "notification ignored"),
        }
        if self.notices.receiver_count() > 0 {
            let notice = ServerNotice {
                server: self.name.as_str().into(),
                method: notification.method,
                params: notification.params,
            };
            let _ = self.notices.send(notice);
        }
    }

    /// The call a log message is for, when it is one that asked for its
    /// own (2026-07-28 sends a request's messages only with it, and only
    /// when it asked). Over HTTP the stream that carried the message says
    /// whose it is. On stdio nothing does, so a modern server's message is
    /// a call's only when that is certain: the one call in flight, or the
    /// one that asked when no other request asks (the connection does not
    /// ask with every request). Otherwise it is nobody's own — never a
    /// guess that could hand one caller another's messages.
    fn log_owner(&self, during: Option<&RequestId>) -> Option<&crate::progress::CallLogs> {
        if let Some(RequestId::Number(id)) = during {
            return match self.requests.pending.get(id) {
                Some(Pending::Call(call)) => call.call.logs.as_ref(),
                _ => None,
            };
        }
        if !self.is_modern() {
            return None;
        }
        let in_flight = || {
            self.requests.pending.values().filter_map(|pending| match pending {
                Pending::Call(call) if call.sent => Some(call),
                _ => None,
            })
        };
        // The lane's count holds its own calls too, which ask for no
        // messages of their own but carry a level the connection sets.
        if self.lane.in_flight() == 1 {
            if let Some(call) = only(in_flight()) {
                return call.call.logs.as_ref();
            }
        }
        if self.logs_for_everyone() {
            return None;
        }
        only(in_flight().filter(|call| call.call.logs.is_some())).and_then(|call| call.call.logs.as_ref())
    }

    /// Whether the server's log messages are everyone's too: an older
    /// server logs per connection, and a modern one is asked for them with
    /// every request once a front client set a level the old way. They are
    /// then relayed as notices (the front gives them to the sessions that
    /// set a level) besides going to the call they came with.
    fn logs_for_everyone(&self) -> bool {
        match &self.era.spoken {
            era::Spoken::Modern(envelope) => envelope.asks_logs(),
            era::Spoken::Plain => true,
        }
    }

    fn log_server_message(&self, params: Option<&Value>) {
        let level = params.and_then(|params| params.get("level")).and_then(Value::as_str).unwrap_or("info");
        let data = params.and_then(|params| params.get("data")).map(Value::to_string).unwrap_or_default();
        match level {
            "debug" => tracing::debug!(server = %self.name, "MCP '{}' says: {data}", self.name),
            "info" | "notice" => {
                tracing::info!(server = %self.name, "MCP '{}' says: {data}", self.name)
            }
            "warning" => tracing::warn!(server = %self.name, "MCP '{}' says: {data}", self.name),
            _ => tracing::error!(server = %self.name, "MCP '{}' says ({level}): {data}", self.name),
        }
    }
}

/// The one item `items` yields, if it yields exactly one.
fn only<T>(mut items: impl Iterator<Item = T>) -> Option<T> {
    let first = items.next()?;
    items.next().is_none().then_some(first)
}
