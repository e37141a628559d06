//! [`Scope`]: Warden as one caller sees it — the host, or one configured
//! agent.
//!
//! `warden.host()` and `warden.agent("coder")?` return the same type, so a
//! consumer that serves either (the front's sessions, the daemon's
//! connections) holds one value and never branches. An agent's scope
//! checks the name once: its tools are the agent's allowlist, its presented
//! tools use the agent's profile, its calls are checked against the
//! allowlist and auto-approved as the agent's `[[agents]]` entry says. A
//! reload that removes the agent makes the scope's calls fail with
//! `UnknownAgent`, naming the agents that remain. The host's scope has no
//! allowlist; policy, approvals and leak checks apply to both.

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

/// Warden as the host or one agent sees it; cheap to clone.
#[derive(Clone)]
pub struct Scope {
    warden: Warden,
    /// `None`: the host's own scope.
    agent: Option<Arc<str>>,
}

/// Which tool profile a presented list is shown at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileChoice<'a> {
    /// The scope's own: the agent's `profile`, or every tool in full for the
    /// host (and an agent without one).
    Own,
    /// The `[tool_profiles.NAME]` of the config.
    Named(&'a str),
}

impl Warden {
    /// The host's own scope: no allowlist.
    pub fn host(&self) -> Scope {
        Scope { warden: self.clone(), agent: None }
    }

    /// The scope of the agent named `agent` in the config's `[[agents]]`;
    /// an unknown name is an error that lists the configured ones.
    pub fn agent(&self, agent: &str) -> Result<Scope, CallError> {
        admit::agent_rules(&self.core.path.rules.borrow(), agent)?;
        Ok(Scope { warden: self.clone(), agent: Some(agent.into()) })
    }

    /// [`Warden::agent`] for a name that may be absent (a bridge request's,
    /// a front endpoint's): the host's scope without one.
    pub fn scope(&self, agent: Option<&str>) -> Result<Scope, CallError> {
        match agent {
            Some(agent) => self.agent(agent),
            None => Ok(self.host()),
        }
    }
}

impl Scope {
    /// The agent's name; `None` for the host.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The handle the scope is of.
    pub fn warden(&self) -> &Warden {
        &self.warden
    }

    /// The tool profile the agent's `[[agents]]` entry names, if any.
    pub fn profile(&self) -> Option<String> {
        let agent = self.agent.as_deref()?;
        self.warden.core.path.rules.borrow().agent(agent)?.profile.clone()
    }

    /// The tools this scope may see and call.
    pub fn tools(&self) -> Result<Vec<ToolEntry>, CallError> {
        self.warden.tools_for(self.agent())
    }

    /// The tools as a model is shown them, at the detail `profile` gives
    /// each, followed by Warden's built-in `describe_tool`, with which the
    /// model fetches the full definition of a tool it was shown briefly —
    /// and, when the profile defers any tool (leaves it out), by
    /// [`FIND_TOOLS`](crate::FIND_TOOLS), with which it finds them.
    pub fn presented_tools(&self, profile: ProfileChoice<'_>) -> Result<Vec<Value>, CallError> {
        let named = match profile {
            ProfileChoice::Own => None,
            ProfileChoice::Named(name) => Some(name),
        };
        self.warden.presented_tools_for(self.agent(), named)
    }

    /// The `limit` tools (1 to 20) this scope may call that best match
    /// `query` — what the caller wants done, in words — best first, each
    /// with its full definition and why it matched. What the built-in
    /// [`FIND_TOOLS`](crate::FIND_TOOLS) answers.
    pub fn find_tools(&self, query: &str, limit: usize) -> Result<Vec<crate::FoundTool>, CallError> {
        self.warden.find_tools_for(self.agent(), query, limit)
    }

    /// The full definition of `name` as its server listed it, with the
    /// namespaced name, if this scope may see it.
    pub fn describe_tool(&self, name: &str) -> Result<Value, CallError> {
        self.warden.describe_tool_for(self.agent(), name)
    }

    /// Runs the tool named `name` (`server__tool`) with `arguments`, which
    /// must be a JSON object (or null for none): refused unless the
    /// agent's allowlist covers it, then policed (policy, approval, leak
    /// detection). Waits while the server restarts, repeats a call that
    /// never reached a crashed server, and ends within the tool's timeout
    /// (or `options`') whatever happens. Dropping the future cancels the
    /// call. The built-ins [`DESCRIBE_TOOL`](crate::DESCRIBE_TOOL) and
    /// [`FIND_TOOLS`](crate::FIND_TOOLS) are answered by Warden itself.
    pub async fn call(&self, name: &str, arguments: Value, options: CallOptions) -> Result<CallToolResult, CallError> {
        self.warden.core.path.call(self.agent(), name, arguments, options).await
    }

    /// Runs a tool like [`Scope::call`] and renders the result as the text
    /// a model should read: images and audio summarised, embedded resources
    /// as their text, `isError` marked, and at most the server's output
    /// limit (`output_limit_bytes`), cut with a note saying how much.
    pub async fn call_text(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<RenderedResult, CallError> {
        let result = self.call(name, arguments, options).await?;
        Ok(self.warden.render(name, &result))
    }

    /// Sends one of `server`'s own requests (a resource read, a prompt, a
    /// completion, a subscription, a log level) and returns the server's
    /// result, secrets redacted: refused for an agent unless its allowlist
    /// covers the primitive tool that stands for the request. It waits
    /// through restarts within `options`' timeout (else the server's call
    /// timeout) like a call — its other options are a tool call's and do
    /// not apply here; see `call/forward.rs` for which policy applies.
    pub async fn request(
        &self,
        server: &str,
        request: ServerRequest,
        params: Value,
        options: CallOptions,
    ) -> Result<Value, CallError> {
        self.warden.core.path.forward(self.agent(), server, request, params, options.chosen_timeout()).await
    }

    /// Hands out a grant that covers this scope's calls only (an agent's;
    /// the host's covers every caller).
    pub async fn add_grant(&self, grant: GrantRequest, by: &str) -> Result<u64, GrantError> {
        self.warden.add_grant_for(self.agent(), grant, by).await
    }
}
