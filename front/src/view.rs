//! What one front session sees: which Warden (the host's own view or an
//! agent's), through which endpoint (every server, or one server under its
//! own names), and the translation between the names the client uses and
//! the names Warden's handle takes.
//!
//! - `/mcp` (and `warden mcp`): every server's tools under their namespaced
//!   names (`srv__tool`), prompts named the same way, resources under
//!   `warden://srv/<the server's own URI>` (`uris.rs`).
//! - `/mcp/servers/<name>`: one server's tools, prompts and resources under
//!   the server's own names and URIs, still through the call pipeline.
//!
//! Warden's primitive tools (`srv__read_resource`, ...) are for models that
//! only see tools; a front serves resources and prompts natively, so they
//! are left out unless `[front] resource_tools = true`. `describe_tool` is
//! listed only when a tool profile shortens the definitions.

use std::sync::Arc;

use serde_json::Value;
use warden_actors::{
    CallError, CallOptions, CallToolResult, ProfileChoice, Scope, ServerOffers, ServerRequest, Snapshot, ToolEntry,
    Warden, DESCRIBE_TOOL,
};

/// Which part of Warden a session is bound to.
#[derive(Clone)]
pub struct View {
    /// The host's scope, or the agent's whose allowlist and profile apply.
    scope: Scope,
    /// `Some(server)` for `/mcp/servers/<server>`: that server only, under
    /// its own names.
    pub(crate) server: Option<Arc<str>>,
    /// Whether the primitive tools are listed too.
    pub(crate) resource_tools: bool,
}

impl View {
    /// The view of `agent` (none: the host's) on `server` (none: every
    /// server), both checked against the running config.
    pub fn of(
        warden: &Warden,
        agent: Option<&str>,
        server: Option<&str>,
        resource_tools: bool,
    ) -> Result<View, CallError> {
        let scope = warden.scope(agent)?;
        if let Some(server) = server {
            let snapshot = warden.snapshot();
            if !snapshot.server_names().any(|name| name == server) {
                let known = snapshot.server_names().map(str::to_string).collect();
                return Err(CallError::UnknownServer { server: server.to_string(), known });
            }
        }
        Ok(View { scope, server: server.map(Into::into), resource_tools })
    }

    /// Who the session is and what it sees, for logs.
    pub fn who(&self) -> String {
        match (self.scope.agent(), &self.server) {
            (Some(agent), Some(server)) => format!("agent '{agent}' on server '{server}'"),
            (Some(agent), None) => format!("agent '{agent}'"),
            (None, Some(server)) => format!("server '{server}'"),
            (None, None) => "every server".to_string(),
        }
    }

    /// The tools this session lists, as `tools/list` shows them.
    pub(crate) fn tools(&self) -> Result<Vec<Value>, CallError> {
        let entries = self.entries()?;
        let hidden = |entry: &ToolEntry| entry.primitive_tool.is_some() && !self.resource_tools;
        if let Some(server) = &self.server {
            // In the server's own order, as the bare server lists them.
            let mut shown: Vec<&ToolEntry> =
                entries.iter().filter(|entry| *entry.server == **server && !hidden(entry)).collect();
            shown.sort_by_key(|entry| entry.position);
            return Ok(shown
                .into_iter()
                .map(|entry| serde_json::to_value(&entry.tool).expect("a tool serialises"))
                .collect());
        }
        let presented = self.scope.presented_tools(ProfileChoice::Own)?;
        let hidden_names: Vec<&str> =
            entries.iter().filter(|entry| hidden(entry)).map(|entry| entry.name.as_str()).collect();
        let profiled = self.scope.profile().is_some();
        Ok(presented
            .into_iter()
            .filter(|tool| {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                !hidden_names.contains(&name) && (profiled || name != DESCRIBE_TOOL)
            })
            .collect())
    }

    /// The full definition of the tool named `name`, if this view may call
    /// it.
    pub(crate) fn describe(&self, name: &str) -> Result<Value, CallError> {
        self.scope.describe_tool(name)
    }

    /// The registered tools this session may call.
    fn entries(&self) -> Result<Vec<ToolEntry>, CallError> {
        self.scope.tools()
    }

    /// The handle the view is of.
    pub(crate) fn warden(&self) -> &Warden {
        self.scope.warden()
    }

    /// The namespaced name of the tool the client calls `name`; `None` when
    /// this view has no such tool.
    pub(crate) fn tool_name(&self, name: &str) -> Option<String> {
        let Some(server) = &self.server else { return Some(name.to_string()) };
        // One lookup, nothing copied: the name the Registry gave that tool.
        let snapshot = self.warden().snapshot();
        let namespaced = snapshot.name_for(server, name);
        let entry = snapshot.tool(&namespaced)?;
        (*entry.server == **server && entry.tool.name == name).then_some(namespaced)
    }

    /// Runs a tool by its namespaced name.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        self.scope.call(name, arguments, options).await
    }

    /// Sends one of a server's own requests.
    pub(crate) async fn request(
        &self,
        server: &str,
        request: ServerRequest,
        params: Value,
    ) -> Result<Value, CallError> {
        self.scope.request(server, request, params, CallOptions::default()).await
    }

    /// The servers in this view that are running and offer what `wants`
    /// picks, in name order.
    pub(crate) fn servers_offering(&self, snapshot: &Snapshot, wants: fn(&ServerOffers) -> bool) -> Vec<String> {
        snapshot
            .server_names()
            .filter(|name| self.server.as_deref().is_none_or(|only| only == *name))
            .filter(|name| {
                snapshot.status(name).is_some_and(|status| status.state == warden_actors::ServerState::Running)
            })
            .filter(|name| snapshot.offers(name).as_ref().is_some_and(wants))
            .map(str::to_string)
            .collect()
    }

    /// Whether one server is in this view.
    pub(crate) fn sees_server(&self, server: &str) -> bool {
        self.server.as_deref().is_none_or(|only| only == server)
    }
}
