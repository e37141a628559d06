//! The policy side of the `Warden` handle: what a caller may see, each
//! tool's resolved policy, the approver, grants and session auto-approval.
//! A [`Scope`](super::Scope) reaches the caller-dependent ones with its
//! agent (`None` for the host).

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use warden_policy::{present_tool, Detail, Grant, ResolvedPolicy};

use super::Warden;
use crate::approver::{Approver, GrantRequest};
use crate::call::{admit, describe, Caller};
use crate::error::{CallError, GrantError};
use crate::policy_gate::GateMsg;
use crate::registry::ToolEntry;
use crate::tool_search::{self, FoundTool};

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
    /// The tools `caller` may see and call.
    pub(super) fn tools_for(&self, caller: Caller<'_>) -> Result<Vec<ToolEntry>, CallError> {
        let mut tools = self.tools();
        if let Some(agent) = caller {
            let rules = self.core.path.rules.borrow().clone();
            let allowed = &admit::agent_rules(&rules, agent)?.allowed_tools;
            tools.retain(|entry| allowed.matches(&entry.name));
        }
        Ok(tools)
    }

    /// What [`Scope::presented_tools`](super::Scope::presented_tools) shows `caller`; an agent's own
    /// `profile` applies when `profile` is `None`.
    pub(super) fn presented_tools_for(
        &self,
        caller: Caller<'_>,
        profile: Option<&str>,
    ) -> Result<Vec<Value>, CallError> {
        let rules = self.core.path.rules.borrow().clone();
        let tools = self.tools_for(caller)?;
        let profile_name = profile.or_else(|| caller.and_then(|agent| rules.agent(agent)?.profile.as_deref()));
        let profile = match profile_name {
            None => None,
            Some(name) => Some(rules.profile(name).ok_or_else(|| CallError::UnknownProfile {
                profile: name.to_string(),
                known: rules.profile_names().map(str::to_string).collect(),
            })?),
        };
        let mut deferred = false;
        let mut presented: Vec<Value> = tools
            .iter()
            .filter_map(|entry| {
                let detail = profile.map_or(Detail::Full, |profile| profile.detail_for(&entry.name));
                let summary = match detail {
                    Detail::Full => None,
                    Detail::Deferred => {
                        deferred = true;
                        return None;
                    }
                    Detail::Summary | Detail::Brief => self.summary_of(&entry.server, &entry.tool.name),
                };
                let definition = serde_json::to_value(&entry.tool).expect("a tool serialises");
                Some(present_tool(&entry.name, &definition, detail, summary.as_deref()))
            })
            .collect();
        presented.push(describe::definition());
        // Tools left out are found by what they do.
        if deferred {
            presented.push(tool_search::definition());
            presented.push(tool_search::call_tool_definition());
        }
        Ok(presented)
    }

    /// The `limit` tools that best match `query` among those `caller` may
    /// call, best first.
    pub(super) fn find_tools_for(
        &self,
        caller: Caller<'_>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<FoundTool>, CallError> {
        let rules = self.core.path.rules.borrow().clone();
        let snapshot = self.snapshot();
        self.core.path.find_tools(&snapshot, &rules, caller, query, limit)
    }

    /// The full definition of `name`, if `caller` may see it.
    pub(super) fn describe_tool_for(&self, caller: Caller<'_>, name: &str) -> Result<Value, CallError> {
        let rules = self.core.path.rules.borrow().clone();
        describe::describe(&self.tools(), &rules, caller, name)
    }

    /// Every running tool's resolved policy, with where each field came from.
    pub fn tool_policies(&self) -> Vec<ToolPolicyRow> {
        let rules = self.core.path.rules.borrow().clone();
        self.tools()
            .into_iter()
            .map(|entry| {
                let timeout = self.core.path.slots.borrow().get(&entry.server).map(|slot| slot.settings.call_timeout);
                let policy = rules.resolve(&entry, timeout.unwrap_or(warden_config::DEFAULT_CALL_TIMEOUT));
                ToolPolicyRow { name: entry.name, server: entry.server, policy }
            })
            .collect()
    }

    /// Attaches the approver that answers approval requests, replacing the
    /// one from the config (if any).
    pub fn attach_approver(&self, approver: Arc<dyn Approver>) {
        let _ = self.core.path.gate.cast(GateMsg::AttachApprover(Some(approver)));
    }

    /// Detaches the approver: calls that need approval are denied again.
    pub fn detach_approver(&self) {
        let _ = self.core.path.gate.cast(GateMsg::AttachApprover(None));
    }

    /// Switches auto-approval for this session (until Warden stops):
    /// `unless_auto_approved` tools run unasked; `always` tools still ask.
    pub async fn set_session_auto_approve(&self, on: bool) {
        let _ = self.core.path.gate.cast(GateMsg::SetSessionAutoApprove(on));
        // Returns once the switch is visible to the next call.
        let mut view = self.core.path.gate_view.clone();
        let _ = view.wait_for(|view| view.session_auto_approve == on).await;
    }

    /// The grants in force.
    pub fn grants(&self) -> Vec<Grant> {
        let now = tokio::time::Instant::now().into_std();
        self.core.path.gate_view.borrow().grants.iter().filter(|grant| !grant.expired(now)).cloned().collect()
    }

    /// Hands out a grant for every caller ahead of any request (`by` says
    /// who gave it, for the log). Returns its id.
    pub async fn add_grant(&self, grant: GrantRequest, by: &str) -> Result<u64, GrantError> {
        self.add_grant_for(None, grant, by).await
    }

    /// [`Warden::add_grant`], limited to `caller` when it is an agent.
    pub(super) async fn add_grant_for(
        &self,
        caller: Caller<'_>,
        grant: GrantRequest,
        by: &str,
    ) -> Result<u64, GrantError> {
        let message = |reply| GateMsg::AddGrant { grant, agent: caller.map(str::to_string), by: by.to_string(), reply };
        let id = match self.core.path.gate.call(message, None).await {
            Ok(ractor::rpc::CallResult::Success(result)) => result.map_err(GrantError::BadPattern)?,
            _ => return Err(GrantError::Stopped),
        };
        let mut view = self.core.path.gate_view.clone();
        let _ = view.wait_for(|view| view.grants.iter().any(|grant| grant.id == id)).await;
        Ok(id)
    }

    /// Revokes grant `id`; false when there is none.
    pub async fn revoke_grant(&self, id: u64) -> bool {
        let revoked = matches!(
            self.core.path.gate.call(|reply| GateMsg::RevokeGrant { id, reply }, None).await,
            Ok(ractor::rpc::CallResult::Success(true))
        );
        if revoked {
            let mut view = self.core.path.gate_view.clone();
            let _ = view.wait_for(|view| view.grants.iter().all(|grant| grant.id != id)).await;
        }
        revoked
    }
}
