//! The policy side of the `Warden` handle: what an agent may see, each
//! tool's resolved policy, the approver, grants and session auto-approval,
//! and the built-in `describe_tool`.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};
use warden_policy::{present_tool, Detail, Grant, ResolvedPolicy};
use warden_protocol::{CallToolResult, ContentBlock};

use super::Warden;
use crate::approver::{Approver, GrantRequest};
use crate::error::CallError;
use crate::policed_call;
use crate::policy_gate::GateMsg;
use crate::policy_rules::PolicyRules;
use crate::registry::ToolEntry;

/// The name of Warden's built-in tool that returns the full definition of
/// any tool the caller may see (for models shown brief or summary
/// definitions).
pub const DESCRIBE_TOOL: &str = "describe_tool";

/// One tool and its resolved policy.
#[derive(Debug, Clone, Serialize)]
pub struct ToolPolicyRow {
    /// The namespaced name.
    pub name: String,
    /// Its server.
    pub server: String,
    /// Each field and the layer it came from.
    pub policy: ResolvedPolicy,
}

impl Warden {
    /// The tools `agent` may see and call (every tool for `None`); an
    /// unknown agent is an error naming the configured ones.
    pub fn tools_for(&self, agent: Option<&str>) -> Result<Vec<ToolEntry>, CallError> {
        let rules = self.rules.borrow().clone();
        let mut tools = self.tools();
        if let Some(agent) = agent {
            let allowed = &policed_call::agent_rules(&rules, agent)?.allowed_tools;
            tools.retain(|entry| allowed.matches(&entry.name));
        }
        Ok(tools)
    }

    /// The tool definitions to hand a model: the tools `agent` may use, each
    /// shown at the detail `profile` gives it — the agent's own `profile`
    /// when `None`, every tool in full when neither names one — followed by
    /// Warden's built-in `describe_tool`, with which the model fetches the
    /// full definition of a tool it was shown briefly.
    pub fn presented_tools(&self, agent: Option<&str>, profile: Option<&str>) -> Result<Vec<Value>, CallError> {
        let rules = self.rules.borrow().clone();
        let tools = self.tools_for(agent)?;
        let profile_name = profile.or_else(|| agent.and_then(|agent| rules.agent(agent)?.profile.as_deref()));
        let profile = match profile_name {
            None => None,
            Some(name) => Some(rules.profile(name).ok_or_else(|| CallError::UnknownProfile {
                profile: name.to_string(),
                known: rules.profile_names().map(str::to_string).collect(),
            })?),
        };
        let mut presented: Vec<Value> = tools
            .iter()
            .map(|entry| {
                let detail = profile.map_or(Detail::Full, |profile| profile.detail_for(&entry.name));
                let definition = serde_json::to_value(&entry.tool).expect("a tool serialises");
                let summary = match detail {
                    Detail::Full => None,
                    Detail::Summary | Detail::Brief => self.summary_of(&entry.server, &entry.tool.name),
                };
                present_tool(&entry.name, &definition, detail, summary.as_deref())
            })
            .collect();
        presented.push(describe_tool_definition());
        Ok(presented)
    }

    /// Every running tool's resolved policy, with where each field came from.
    pub fn tool_policies(&self) -> Vec<ToolPolicyRow> {
        let rules = self.rules.borrow().clone();
        self.tools()
            .into_iter()
            .map(|entry| {
                let timeout = self.settings.borrow().get(&entry.server).map(|slot| slot.settings.call_timeout);
                let policy = rules.resolve(&entry, timeout.unwrap_or(crate::config::DEFAULT_CALL_TIMEOUT));
                ToolPolicyRow { name: entry.name, server: entry.server, policy }
            })
            .collect()
    }

    /// Attaches the approver that answers approval requests, replacing the
    /// one from the config (if any).
    pub fn attach_approver(&self, approver: Arc<dyn Approver>) {
        let _ = self.gate.cast(GateMsg::AttachApprover(Some(approver)));
    }

    /// Detaches the approver: calls that need approval are denied again.
    pub fn detach_approver(&self) {
        let _ = self.gate.cast(GateMsg::AttachApprover(None));
    }

    /// Switches auto-approval for this session (until Warden stops):
    /// `unless_auto_approved` tools run unasked; `always` tools still ask.
    pub async fn set_session_auto_approve(&self, on: bool) {
        let _ = self.gate.cast(GateMsg::SetSessionAutoApprove(on));
        // Returns once the switch is visible to the next call.
        let mut view = self.gate_view.clone();
        let _ = view.wait_for(|view| view.session_auto_approve == on).await;
    }

    /// The grants in force.
    pub fn grants(&self) -> Vec<Grant> {
        let now = tokio::time::Instant::now().into_std();
        self.gate_view.borrow().grants.iter().filter(|grant| !grant.expired(now)).cloned().collect()
    }

    /// Hands out a grant ahead of any request; `agent` limits it to one
    /// agent. Returns its id, or why the tool pattern is bad.
    pub async fn add_grant(&self, grant: GrantRequest, agent: Option<&str>, by: &str) -> Result<u64, String> {
        let message = |reply| GateMsg::AddGrant { grant, agent: agent.map(str::to_string), by: by.to_string(), reply };
        let id = match self.gate.call(message, None).await {
            Ok(ractor::rpc::CallResult::Success(result)) => result?,
            _ => return Err("Warden is shutting down".into()),
        };
        let mut view = self.gate_view.clone();
        let _ = view.wait_for(|view| view.grants.iter().any(|grant| grant.id == id)).await;
        Ok(id)
    }

    /// Revokes grant `id`; false when there is none.
    pub async fn revoke_grant(&self, id: u64) -> bool {
        let revoked = matches!(
            self.gate.call(|reply| GateMsg::RevokeGrant { id, reply }, None).await,
            Ok(ractor::rpc::CallResult::Success(true))
        );
        if revoked {
            let mut view = self.gate_view.clone();
            let _ = view.wait_for(|view| view.grants.iter().all(|grant| grant.id != id)).await;
        }
        revoked
    }

    /// The full definition of `name` as its server listed it (with the
    /// namespaced name), if `agent` may see it.
    pub fn describe_tool(&self, agent: Option<&str>, name: &str) -> Result<Value, CallError> {
        let rules = self.rules.borrow().clone();
        describe(&self.tools(), &rules, agent, name)
    }

    /// Answers a call of [`DESCRIBE_TOOL`]: `{ "tool": "<name>" }`.
    pub(super) fn describe_tool_call(
        &self,
        rules: &PolicyRules,
        agent: Option<&str>,
        arguments: &Value,
    ) -> Result<CallToolResult, CallError> {
        let Some(name) = arguments.get("tool").and_then(Value::as_str) else {
            return Ok(error_result(format!(
                "{DESCRIBE_TOOL} takes {{\"tool\": \"<name>\"}}, the name of a tool you can see"
            )));
        };
        match describe(&self.tools(), rules, agent, name) {
            Ok(definition) => {
                let text = serde_json::to_string_pretty(&definition).expect("a JSON value serialises");
                Ok(CallToolResult {
                    content: vec![ContentBlock::text(text)],
                    structured_content: Some(definition),
                    is_error: None,
                    extra: Default::default(),
                })
            }
            Err(error @ CallError::UnknownAgent { .. }) => Err(error),
            Err(error) => Ok(error_result(error.to_string())),
        }
    }
}

/// `describe_tool` itself, as a model is shown it.
pub(super) fn describe_tool_definition() -> Value {
    json!({
        "name": DESCRIBE_TOOL,
        "description": "Returns the full definition (description and input schema) of a tool you can call. Use it before calling a tool whose parameters you were not shown.",
        "inputSchema": {
            "type": "object",
            "properties": { "tool": { "type": "string", "description": "The tool's name, as listed." } },
            "required": ["tool"]
        },
        "annotations": { "readOnlyHint": true }
    })
}

fn describe(tools: &[ToolEntry], rules: &PolicyRules, agent: Option<&str>, name: &str) -> Result<Value, CallError> {
    if name == DESCRIBE_TOOL {
        return Ok(describe_tool_definition());
    }
    policed_call::check_allowed(rules, agent, name)?;
    let entry = tools
        .iter()
        .find(|entry| entry.name == name)
        .ok_or_else(|| CallError::UnknownTool { name: name.to_string() })?;
    let mut definition = serde_json::to_value(&entry.tool).expect("a tool serialises");
    definition["name"] = Value::String(entry.name.clone());
    Ok(definition)
}

fn error_result(text: String) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(text)],
        structured_content: None,
        is_error: Some(true),
        extra: Default::default(),
    }
}
