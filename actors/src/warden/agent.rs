//! [`AgentScope`]: Warden as one configured agent sees it.
//!
//! `warden.agent("coder")?` checks the name once and returns a view bound
//! to it, so no method takes an agent argument: the scope's tools are the
//! agent's allowlist, its presented tools use the agent's profile, and its
//! calls are checked against the allowlist and auto-approved as the agent's
//! `[[agents]]` entry says. The un-scoped [`Warden`] is the host's own view.
//! A reload that removes the agent makes the scope's calls fail with
//! `UnknownAgent`, naming the agents that remain.

use std::sync::Arc;

use serde_json::Value;
use warden_policy::RenderedResult;
use warden_protocol::CallToolResult;

use super::Warden;
use crate::approver::GrantRequest;
use crate::call::forward::ServerRequest;
use crate::call::{admit, CallOptions};
use crate::error::{CallError, GrantError};
use crate::registry::ToolEntry;

/// Warden seen by one agent; cheap to clone.
#[derive(Clone)]
pub struct AgentScope {
    warden: Warden,
    agent: Arc<str>,
}

impl Warden {
    /// The view of the agent named `agent` in the config's `[[agents]]`;
    /// an unknown name is an error that lists the configured ones.
    pub fn agent(&self, agent: &str) -> Result<AgentScope, CallError> {
        admit::agent_rules(&self.core.path.rules.borrow(), agent)?;
        Ok(AgentScope { warden: self.clone(), agent: agent.into() })
    }
}

impl AgentScope {
    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.agent
    }

    /// The tool profile the agent's `[[agents]]` entry names, if any.
    pub fn profile(&self) -> Option<String> {
        self.warden.core.path.rules.borrow().agent(&self.agent)?.profile.clone()
    }

    /// The tools the agent may see and call.
    pub fn tools(&self) -> Result<Vec<ToolEntry>, CallError> {
        self.warden.tools_for(Some(&self.agent))
    }

    /// The agent's tools as a model is shown them: at the detail of the
    /// tool profile `profile`, or the agent's own profile when `None`,
    /// followed by `describe_tool`.
    pub fn presented_tools(&self, profile: Option<&str>) -> Result<Vec<Value>, CallError> {
        self.warden.presented_tools_for(Some(&self.agent), profile)
    }

    /// The full definition of `name`, if the agent may see it.
    pub fn describe_tool(&self, name: &str) -> Result<Value, CallError> {
        self.warden.describe_tool_for(Some(&self.agent), name)
    }

    /// Runs a tool for the agent: refused unless its allowlist covers the
    /// tool, then as [`Warden::call_tool`].
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        self.call(name, arguments, CallOptions::default()).await
    }

    /// [`AgentScope::call_tool`] with per-call options.
    pub async fn call(&self, name: &str, arguments: Value, options: CallOptions) -> Result<CallToolResult, CallError> {
        self.warden.core.path.call(Some(&self.agent), name, arguments, options).await
    }

    /// [`Warden::request`] for the agent: refused unless its allowlist
    /// covers the primitive tool that stands for the request.
    pub async fn request(
        &self,
        server: &str,
        request: ServerRequest,
        params: Value,
        timeout: Option<std::time::Duration>,
    ) -> Result<Value, CallError> {
        self.warden.core.path.forward(Some(&self.agent), server, request, params, timeout).await
    }

    /// [`Warden::call_tool_text`] for the agent.
    pub async fn call_tool_text(&self, name: &str, arguments: Value) -> Result<RenderedResult, CallError> {
        self.call_text(name, arguments, CallOptions::default()).await
    }

    /// [`AgentScope::call_tool_text`] with per-call options.
    pub async fn call_text(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<RenderedResult, CallError> {
        let result = self.call(name, arguments, options).await?;
        Ok(self.warden.render(name, &result))
    }

    /// Hands out a grant that covers this agent's calls only.
    pub async fn add_grant(&self, grant: GrantRequest, by: &str) -> Result<u64, GrantError> {
        self.warden.add_grant_for(Some(&self.agent), grant, by).await
    }
}
