//! What a 2026-07-28 server tells unasked, through one
//! `subscriptions/listen` per connection: the list changes its
//! capabilities announce (tools, prompts, resources) and updates of the
//! resources subscribed to.
//!
//! A front client's `resources/subscribe` (the earlier revisions' way) is
//! answered here and becomes a URI in the filter: the subscription is
//! opened again with it (the old one cancelled), and so on unsubscribe.
//! The server's `notifications/resources/updated` then arrive like any
//! other notice. When the subscription breaks (HTTP) or the server ends
//! it, it is opened again after a pause (1 s, doubling to a minute) and
//! the tools listed again, for the changes missed between; a server that
//! refuses it is logged, and its changes are not heard.

use std::collections::BTreeSet;
use std::time::Duration;

use ractor::ActorRef;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::time::Instant;
use warden_protocol::{ErrorObject, Message, RequestId, ServerCapabilities};

use super::{spawn_timer, Pending, Phase, ServerActorState, ServerMsg, ToolCall};

/// The connection's subscription.
#[derive(Default)]
pub(crate) struct Subscription {
    /// The list changes asked for (`toolsListChanged`: true, ...).
    lists: Map<String, Value>,
    /// The resources whose updates are asked for.
    resources: BTreeSet<String>,
    /// The open `subscriptions/listen`'s request id.
    open: Option<i64>,
    /// How many times it was opened again after it ended.
    reopened: u32,
}

impl ServerActorState {
    /// Opens the subscription for the list changes the server can
    /// announce; none when it announces nothing.
    pub(super) fn listen(&mut self, capabilities: &ServerCapabilities) {
        let announces = |capability: &Option<Value>| {
            capability.as_ref().and_then(|capability| capability.get("listChanged")).and_then(Value::as_bool)
                == Some(true)
        };
        for (capability, key) in [
            (&capabilities.tools, "toolsListChanged"),
            (&capabilities.prompts, "promptsListChanged"),
            (&capabilities.resources, "resourcesListChanged"),
        ] {
            if announces(capability) {
                self.subscription.lists.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.subscription.lists.is_empty() {
            self.subscribe();
        }
    }

    /// Sends `subscriptions/listen` with the filter as it is now, ending
    /// the one open before it.
    fn subscribe(&mut self) {
        if let Some(old) = self.subscription.open.take() {
            self.requests.pending.remove(&old);
            self.send(Message::notification("notifications/cancelled", Some(json!({"requestId": old}))));
        }
        let mut filter = self.subscription.lists.clone();
        if !self.subscription.resources.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(self.subscription.resources));
        }
        if filter.is_empty() {
            return;
        }
        let id = self.fresh_id();
        self.requests.pending.insert(id, Pending::Listen);
        let params = self.stamped(Some(json!({ "notifications": filter })));
        self.send(Message::request(RequestId::Number(id), "subscriptions/listen", params));
        self.subscription.open = Some(id);
    }

    /// A `resources/subscribe` or `resources/unsubscribe`, answered here.
    pub(super) fn resource_subscription(&mut self, call: &ToolCall) -> Box<RawValue> {
        let uri = serde_json::from_str::<Value>(call.params.get())
            .ok()
            .and_then(|params| params.get("uri").and_then(Value::as_str).map(str::to_string));
        if let Some(uri) = uri {
            let changed = match call.method {
                "resources/subscribe" => self.subscription.resources.insert(uri),
                _ => self.subscription.resources.remove(&uri),
            };
            if changed {
                tracing::debug!(server = %self.name, resources = self.subscription.resources.len(), "resource subscriptions changed (2026-07-28: listening again)");
                self.subscribe();
            }
        }
        serde_json::value::to_raw_value(&json!({})).expect("a JSON value always serialises")
    }

    /// The server answered the `subscriptions/listen`: ended, broken or refused.
    pub(super) fn listen_ended(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: i64,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        if self.subscription.open != Some(id) {
            return; // One replaced meanwhile.
        }
        self.subscription.open = None;
        // What it would have announced meanwhile is not heard.
        self.cache.clear();
        match outcome {
            Err(error) if error.code != warden_protocol::HTTP_TRANSPORT_ERROR => {
                return tracing::warn!(
                    server = %self.name,
                    "MCP '{}': it refused `subscriptions/listen` ({}: {}); its list changes will not be seen",
                    self.name, error.code, error.message
                )
            }
            Err(error) => {
                tracing::info!(server = %self.name, "MCP '{}': its subscription to list changes broke: {}", self.name, error.message)
            }
            Ok(_) => {
                tracing::info!(server = %self.name, "MCP '{}': the server ended its subscription to list changes", self.name)
            }
        }
        if self.phase == Phase::Down {
            return;
        }
        let pause = Duration::from_secs((1u64 << self.subscription.reopened.min(6)).min(60));
        self.subscription.reopened += 1;
        spawn_timer(myself, Instant::now() + pause, || ServerMsg::Relisten);
    }

    /// Whether the server's tool list changes reach Warden: it announces
    /// them and the subscription is open.
    pub(super) fn hears_tools(&self) -> bool {
        self.subscription.open.is_some() && self.subscription.lists.contains_key("toolsListChanged")
    }

    /// Listens again after a subscription ended, and lists the tools again.
    pub(super) fn relisten(&mut self) {
        if self.phase == Phase::Down || self.subscription.open.is_some() {
            return;
        }
        self.subscribe();
        self.refresh_tools();
    }
}
