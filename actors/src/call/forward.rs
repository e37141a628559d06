//! Requests of a server's own that a front passes on: resources, prompts,
//! completions, subscriptions and log levels.
//!
//! They take the call pipeline's steps that make sense for them. The
//! agent's allowlist is asked about the primitive tool that stands for the
//! request (`srv__read_resource` for a read or a subscription,
//! `srv__list_prompts` for a listing, ...), so one allowlist governs both
//! ways of reaching a server's resources and prompts, and that tool's
//! policy gives the timeout and the leak rule. No approval is asked: these
//! requests read, or set what the connection reports. They wait through
//! restarts and are repeated after a crash, and the answer is policed for
//! secrets like a tool result.

use std::time::Duration;

use serde_json::Value;
use warden_policy::LeakAction;

use super::{admit, attempt, CallPath, Caller};
use crate::error::CallError;
use crate::primitive_tools::{self, PrimitiveTool};
use crate::registry::ToolEntry;

/// A request of a server's own that Warden passes on for a front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerRequest {
    /// `resources/list`.
    ListResources,
    /// `resources/templates/list`.
    ListResourceTemplates,
    /// `resources/read`.
    ReadResource,
    /// `resources/subscribe`.
    Subscribe,
    /// `resources/unsubscribe`.
    Unsubscribe,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
    /// `completion/complete`.
    Complete,
    /// `logging/setLevel`.
    SetLogLevel,
    /// `tasks/get`, of a task an earlier process left (not a front's to
    /// pass on: not in [`ServerRequest::from_method`]).
    TaskStatus,
    /// `tasks/result` (2025-11-25), likewise.
    TaskResult,
}

impl ServerRequest {
    const ALL: [ServerRequest; 9] = [
        ServerRequest::ListResources,
        ServerRequest::ListResourceTemplates,
        ServerRequest::ReadResource,
        ServerRequest::Subscribe,
        ServerRequest::Unsubscribe,
        ServerRequest::ListPrompts,
        ServerRequest::GetPrompt,
        ServerRequest::Complete,
        ServerRequest::SetLogLevel,
    ];

    /// The JSON-RPC method.
    pub fn method(self) -> &'static str {
        match self {
            ServerRequest::ListResources => "resources/list",
            ServerRequest::ListResourceTemplates => "resources/templates/list",
            ServerRequest::ReadResource => "resources/read",
            ServerRequest::Subscribe => "resources/subscribe",
            ServerRequest::Unsubscribe => "resources/unsubscribe",
            ServerRequest::ListPrompts => "prompts/list",
            ServerRequest::GetPrompt => "prompts/get",
            ServerRequest::Complete => "completion/complete",
            ServerRequest::SetLogLevel => "logging/setLevel",
            ServerRequest::TaskStatus => "tasks/get",
            ServerRequest::TaskResult => "tasks/result",
        }
    }

    /// The request a method names, if Warden passes it on.
    pub fn from_method(method: &str) -> Option<ServerRequest> {
        ServerRequest::ALL.into_iter().find(|request| request.method() == method)
    }
}

impl CallPath {
    /// Sends `request` with `params` to `server` for `caller` and returns
    /// the server's result, secrets redacted.
    pub(crate) async fn forward(
        &self,
        caller: Caller<'_>,
        server: &str,
        request: ServerRequest,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, CallError> {
        let method = request.method();
        if self.shut_down() {
            return Err(CallError::ShutDown { name: format!("{method} on {server}") });
        }
        let rules = self.rules.borrow().clone();
        let covering = covering_tool(method, &params);
        let (name, entry) = {
            let snapshot = self.snapshot.borrow();
            if !snapshot.servers.contains_key(server) {
                let known = snapshot.server_names().map(str::to_string).collect();
                return Err(CallError::UnknownServer { server: server.to_string(), known });
            }
            let name = snapshot.names.tool_name(server, covering.tool_name());
            let entry = snapshot.tools.get(&name).cloned();
            (name, entry)
        };
        if request != ServerRequest::SetLogLevel {
            admit::check_allowed(&rules, caller, &name)?;
        }
        let entry = entry.unwrap_or_else(|| std::sync::Arc::new(stand_in(&name, server, covering)));
        let slot = self.slots.borrow().get(server).cloned();
        let _in_flight = slot.as_ref().map(super::Slot::begin_call);
        let settings = slot.map(|slot| slot.settings).unwrap_or_default();
        let policy = rules.resolve(&entry, settings.call_timeout);
        let timeout = timeout.unwrap_or(policy.timeout.value);
        let label = format!("{method} on {server}");
        let raw = attempt::request(&self.snapshot, caller, &label, server, method, &params, &settings, timeout).await?;
        let mut value: Value = serde_json::from_str(raw.get()).map_err(|error| CallError::BadResult {
            server: server.to_string(),
            name: label.clone(),
            problem: error.to_string(),
        })?;
        if policy.leaks.value == LeakAction::Off {
            return Ok(value);
        }
        let mut kinds: Vec<String> = rules.scanner.redact_json(&mut value).into_iter().map(|leak| leak.kind).collect();
        if kinds.is_empty() {
            return Ok(value);
        }
        kinds.sort();
        kinds.dedup();
        if policy.leaks.value == LeakAction::Block {
            tracing::warn!(server, method, kinds = ?kinds, "answer withheld: it contained secrets");
            return Err(CallError::Withheld { name: label, kinds });
        }
        tracing::warn!(server, method, kinds = ?kinds, "secrets redacted from an answer");
        Ok(value)
    }
}

/// The primitive tool whose allowlist entry and policy stand for `method`.
fn covering_tool(method: &str, params: &Value) -> PrimitiveTool {
    match method {
        "resources/list" | "resources/templates/list" => PrimitiveTool::ListResources,
        "prompts/list" => PrimitiveTool::ListPrompts,
        "prompts/get" => PrimitiveTool::GetPrompt,
        "completion/complete" => match params.pointer("/ref/type").and_then(Value::as_str) {
            Some("ref/prompt") => PrimitiveTool::GetPrompt,
            _ => PrimitiveTool::ReadResource,
        },
        _ => PrimitiveTool::ReadResource,
    }
}

/// The covering tool's entry, for a server that has not registered it (it
/// claimed no resources or prompts, or is not running yet).
fn stand_in(name: &str, server: &str, covering: PrimitiveTool) -> ToolEntry {
    let tool = primitive_tools::primitive_tools(true, true)
        .into_iter()
        .find(|(wrapper, _)| *wrapper == covering)
        .map(|(_, tool)| tool)
        .expect("every primitive tool is defined");
    let upstream_name = tool.name.clone();
    ToolEntry {
        name: name.to_string(),
        server: server.to_string(),
        tool,
        upstream_name,
        primitive_tool: Some(covering),
        position: 0,
    }
}
