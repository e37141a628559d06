//! How a client learns what the front is: `initialize` (the revisions
//! before 2026-07-28, which also sets up the session) and what it shares
//! with `server/discover` — the capabilities Warden and the servers of the
//! client's view can honour, and the instructions naming those servers.

use serde_json::{json, Value};
use warden_actors::{ClientOffers, ElicitModes, ServerState};
use warden_protocol::SUPPORTED_PROTOCOL_VERSIONS;

use super::super::view::View;
use super::super::Front;
use super::Session;

impl Session {
    /// Takes what the client declared at `initialize` (or what another
    /// replica's record says it declared).
    pub(super) fn declare(&self, version: &str, capabilities: Value) {
        let mut state = self.state();
        state.version = Some(version.to_string());
        state.elicitation = ElicitModes::declared_in(&capabilities);
        state.offers = ClientOffers {
            roots: capabilities.get("roots").is_some(),
            sampling: capabilities.get("sampling").is_some(),
        };
        state.declared = capabilities;
    }

    pub(super) fn initialize(&self, params: &Value) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let version = if SUPPORTED_PROTOCOL_VERSIONS.contains(&asked) { asked } else { SUPPORTED_PROTOCOL_VERSIONS[0] };
        let capabilities = params.get("capabilities").cloned().unwrap_or_default();
        self.declare(version, capabilities);
        let client = params.pointer("/clientInfo/name").and_then(Value::as_str).unwrap_or("an unnamed client");
        tracing::info!(session = %self.who(), client, version, "front session initialized");
        let snapshot = self.inner.front.warden.snapshot();
        json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(&snapshot),
            "serverInfo": {"name": "warden", "title": "Warden", "version": env!("CARGO_PKG_VERSION")},
            "instructions": instructions(&self.inner.front, &snapshot, &self.inner.view),
        })
    }

    /// What the front offers a client: tools always; resources, prompts
    /// and completions when a server of its view offers them.
    pub(crate) fn capabilities(&self, snapshot: &warden_actors::Snapshot) -> Value {
        let view = &self.inner.view;
        let mut capabilities = json!({
            "tools": {"listChanged": true},
            "logging": {},
        });
        let any = |wants: fn(&warden_actors::ServerOffers) -> bool| {
            view.server.is_none() || !view.servers_offering(snapshot, wants).is_empty()
        };
        if any(|offers| offers.resources) {
            capabilities["resources"] = json!({"subscribe": true, "listChanged": true});
        }
        if any(|offers| offers.prompts) {
            capabilities["prompts"] = json!({"listChanged": true});
        }
        if any(|offers| offers.completions) {
            capabilities["completions"] = json!({});
        }
        capabilities
    }
}

/// What `initialize` tells the client about the servers behind the front.
pub(super) fn instructions(front: &Front, snapshot: &warden_actors::Snapshot, view: &View) -> String {
    let servers: Vec<String> = snapshot
        .statuses()
        .into_iter()
        .filter(|status| view.sees_server(&status.name))
        .map(|status| match &status.state {
            ServerState::Running => format!("{} ({} tools)", status.name, status.tools),
            ServerState::NeedsLogin { .. } => {
                format!("{} ({}; its tools are absent until then)", status.name, front.needs_login(&status.name))
            }
            state => format!("{} ({})", status.name, state.to_string().split(':').next().unwrap_or_default()),
        })
        .collect();
    match &view.server {
        Some(server) => format!("Warden's supervised, policed front for the MCP server '{server}'."),
        None => format!(
            "Warden fronts these MCP servers, supervised and policed: {}. Tool and prompt names are \
             `server__name`; resource URIs are `warden://server/<the server's URI>`.",
            if servers.is_empty() { "none yet".to_string() } else { servers.join(", ") }
        ),
    }
}
