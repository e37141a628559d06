//! The config's policy sections, compiled once: what the call path consults
//! for every call without asking an actor.
//!
//! Everything here is read-only between reloads: per-tool and per-server
//! policy layers, Warden's defaults, agents and their allowlists, whether
//! auto-approval is on, and the leak scanner built from the secrets Warden
//! hands to servers. What changes while Warden runs (grants, session
//! auto-approval, the attached approver) belongs to the PolicyGate.

use std::collections::BTreeMap;
use std::time::Duration;

use warden_policy::{
    resolve_policy, AutoApproval, KnownSecret, LeakScanner, NameRules, PolicyDefaults, PolicyLayer, ResolvedPolicy,
    ToolHints, ToolPatterns, ToolProfile,
};

use crate::registry::ToolEntry;
use warden_config::WardenConfig;

/// One agent's rules.
#[derive(Debug, Clone)]
pub struct AgentRules {
    /// The tools it may see and call.
    pub allowed_tools: ToolPatterns,
    /// Its `unless_auto_approved` calls run unasked.
    pub auto_approve: bool,
    /// The tool profile its tool list is shown with.
    pub profile: Option<String>,
}

/// Which approver the config asks for when the host attaches none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConfiguredApprover {
    /// Nobody: calls that need approval are denied.
    #[default]
    None,
    /// Approve everything.
    Auto,
    /// Deny everything.
    Deny,
}

/// The compiled policy sections of a config.
#[derive(Debug, Clone)]
pub struct PolicyRules {
    tool_overrides: BTreeMap<String, PolicyLayer>,
    server_defaults: BTreeMap<String, PolicyLayer>,
    agents: BTreeMap<String, AgentRules>,
    profiles: BTreeMap<String, ToolProfile>,
    /// `security.auto_approve`.
    pub auto_approve: bool,
    /// How long an approval may wait.
    pub approval_timeout: Duration,
    /// `security.approver`.
    pub approver: ConfiguredApprover,
    /// Finds secrets in arguments and results.
    pub scanner: LeakScanner,
    /// How tool names are built.
    pub names: NameRules,
}

impl Default for PolicyRules {
    /// Warden's defaults and nothing else: no overrides, no agents, no
    /// auto-approval, nobody to approve (so calls that need approval fail
    /// closed), a scanner that knows only credential shapes.
    fn default() -> Self {
        PolicyRules {
            tool_overrides: BTreeMap::new(),
            server_defaults: BTreeMap::new(),
            agents: BTreeMap::new(),
            profiles: BTreeMap::new(),
            auto_approve: false,
            approval_timeout: Duration::from_secs(300),
            approver: ConfiguredApprover::None,
            scanner: LeakScanner::new(Vec::new()),
            names: NameRules::default(),
        }
    }
}

impl PolicyRules {
    /// Compiles a loaded (so already checked) config.
    pub fn from_config(config: &WardenConfig) -> PolicyRules {
        let agents = config
            .agents
            .iter()
            .map(|agent| {
                let allowed_tools = ToolPatterns::new(&agent.allowed_tools).unwrap_or_else(|_| {
                    // `WardenConfig::check_and_expand` compiled these already.
                    unreachable!("agent '{}' has patterns the config check accepted", agent.name)
                });
                let rules =
                    AgentRules { allowed_tools, auto_approve: agent.auto_approve, profile: agent.profile.clone() };
                (agent.name.clone(), rules)
            })
            .collect();
        let known = config
            .known_secrets
            .iter()
            .map(|(label, value)| KnownSecret { label: label.clone(), value: value.clone() })
            .collect();
        PolicyRules {
            tool_overrides: config.security.tool_policies.clone(),
            server_defaults: config
                .servers
                .iter()
                .filter_map(|(name, server)| Some((name.clone(), server.default_policy?)))
                .collect(),
            agents,
            profiles: config
                .tool_profiles
                .iter()
                .filter_map(|(name, profile)| Some((name.clone(), profile.compile(name).ok()?)))
                .collect(),
            auto_approve: config.security.auto_approve,
            approval_timeout: Duration::from_secs_f64(config.security.approval_timeout_secs),
            approver: match config.security.approver.as_str() {
                "auto" => ConfiguredApprover::Auto,
                "deny" => ConfiguredApprover::Deny,
                _ => ConfiguredApprover::None,
            },
            scanner: LeakScanner::new(known),
            // `WardenConfig::check_and_expand` checked the table.
            names: config.naming.rules().unwrap_or_default(),
        }
    }

    /// Turns auto-approval on or off (for hosts that build rules in code).
    pub fn with_auto_approve(mut self, on: bool) -> PolicyRules {
        self.auto_approve = on;
        self
    }

    /// Adds an agent (for hosts that build rules in code).
    pub fn with_agent(mut self, name: &str, rules: AgentRules) -> PolicyRules {
        self.agents.insert(name.to_string(), rules);
        self
    }

    /// Pins a tool's policy (for hosts that build rules in code).
    pub fn with_tool_policy(mut self, tool: &str, layer: PolicyLayer) -> PolicyRules {
        self.tool_overrides.insert(tool.to_string(), layer);
        self
    }

    /// Adds a tool profile (for hosts that build rules in code).
    pub fn with_profile(mut self, name: &str, profile: ToolProfile) -> PolicyRules {
        self.profiles.insert(name.to_string(), profile);
        self
    }

    /// The profile named `name`, if configured.
    pub fn profile(&self, name: &str) -> Option<&ToolProfile> {
        self.profiles.get(name)
    }

    /// The names of every configured profile.
    pub fn profile_names(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }

    /// The agent named `name`, if configured.
    pub fn agent(&self, name: &str) -> Option<&AgentRules> {
        self.agents.get(name)
    }

    /// The names of every configured agent.
    pub fn agent_names(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    /// The policy of `entry`; `call_timeout` is its server's default timeout.
    pub fn resolve(&self, entry: &ToolEntry, call_timeout: Duration) -> ResolvedPolicy {
        let hints = entry
            .tool
            .annotations
            .as_ref()
            .map(|hints| ToolHints { read_only: hints.read_only_hint, destructive: hints.destructive_hint })
            .unwrap_or_default();
        let defaults = PolicyDefaults { timeout: call_timeout, ..PolicyDefaults::default() };
        resolve_policy(self.tool_overrides.get(&entry.name), self.server_defaults.get(&entry.server), hints, &defaults)
    }

    /// Why auto-approval applies to a call by `agent`, if it does (the
    /// session switch is the gate's, and checked there).
    pub fn auto_approval(&self, agent: Option<&str>) -> Option<AutoApproval> {
        if self.auto_approve {
            return Some(AutoApproval::Config);
        }
        let agent = agent?;
        self.agents.get(agent).filter(|rules| rules.auto_approve).map(|_| AutoApproval::Agent(agent.to_string()))
    }
}

#[cfg(test)]
mod tests;

/// Answering servers' questions reads the latest rules.
impl crate::client_features::AskPolicy for tokio::sync::watch::Receiver<std::sync::Arc<PolicyRules>> {
    fn redact(&self, text: &str) -> Option<String> {
        self.borrow().scanner.redact_text(text).map(|(clean, _)| clean)
    }

    fn answer_within(&self) -> Duration {
        self.borrow().approval_timeout
    }

    fn auto_approve(&self) -> bool {
        self.borrow().auto_approve
    }
}
