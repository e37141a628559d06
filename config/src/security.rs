//! The config sections that police calls: `[security]`, `[[agents]]`, and a
//! server's `default_policy`.
//!
//! ```toml
//! [security]
//! auto_approve = false          # approve `unless_auto_approved` tools without asking
//! approver = "none"             # "none" (fail closed), "auto" (approve all), "deny" (deny all)
//! approval_timeout_secs = 300   # an unanswered approval is a denial after this
//! secrets = ["MY_API_KEY"]      # more environment variables whose values must never leak
//!
//! [security.tool_policies.fs__write_file]
//! risk = "high"
//! approval = "always"
//!
//! [[agents]]
//! name = "coder"
//! allowed_tools = ["shell", "fs__*"]
//! auto_approve = false
//! profile = "compact"           # a [tool_profiles.compact] table
//! ```
//!
//! Everything here is checked at load time — unknown keys, bad globs,
//! unknown tool names are not, because servers list their tools later — so a
//! typo in a rule meant to protect something fails loudly instead of
//! protecting nothing.

use std::collections::BTreeMap;

use serde::Deserialize;
use warden_policy::{PolicyLayer, ToolPatterns};

/// `[security]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityConfig {
    /// Per-tool policies by namespaced name; the highest layer.
    #[serde(default)]
    pub tool_policies: BTreeMap<String, PolicyLayer>,
    /// Names of environment variables whose values are secrets, on top of
    /// the ones Warden hands to servers itself.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Approve `unless_auto_approved` calls without asking anyone.
    #[serde(default)]
    pub auto_approve: bool,
    /// Who answers approval requests when the host attaches nobody:
    /// `none` (deny: fail closed), `auto` (approve everything, for
    /// unattended runs) or `deny`.
    #[serde(default = "default_approver")]
    pub approver: String,
    /// How long an approval request may wait for an answer.
    #[serde(default = "default_approval_timeout_secs")]
    pub approval_timeout_secs: f64,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            tool_policies: BTreeMap::new(),
            secrets: Vec::new(),
            auto_approve: false,
            approver: default_approver(),
            approval_timeout_secs: default_approval_timeout_secs(),
        }
    }
}

fn default_approver() -> String {
    "none".into()
}

fn default_approval_timeout_secs() -> f64 {
    300.0
}

/// One `[[agents]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name, as hosts pass it with calls.
    pub name: String,
    /// The tools it may see and call: exact names or globs.
    pub allowed_tools: Vec<String>,
    /// Approve its `unless_auto_approved` calls without asking.
    #[serde(default)]
    pub auto_approve: bool,
    /// The `[tool_profiles.NAME]` its tool list is shown with.
    pub profile: Option<String>,
}

impl SecurityConfig {
    /// Checks the section; the error names the field.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        for (tool, layer) in &self.tool_policies {
            layer.validate().map_err(|problem| (format!("security.tool_policies.{tool}"), problem.to_string()))?;
        }
        if !matches!(self.approver.as_str(), "none" | "auto" | "deny") {
            return Err((
                "security.approver".into(),
                format!("must be \"none\", \"auto\" or \"deny\", not \"{}\"", self.approver),
            ));
        }
        let timeout = self.approval_timeout_secs;
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err((
                "security.approval_timeout_secs".into(),
                format!("must be a positive number of seconds, not {timeout}"),
            ));
        }
        for name in &self.secrets {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err((
                    "security.secrets".into(),
                    format!("\"{name}\" is not an environment variable name (letters, digits and '_')"),
                ));
            }
        }
        Ok(())
    }
}

impl AgentConfig {
    /// Checks one agent; the error names the field.
    pub(crate) fn check(&self, index: usize) -> Result<(), (String, String)> {
        if self.name.trim().is_empty() {
            return Err((format!("agents[{index}].name"), "is empty; give the agent the name hosts use".into()));
        }
        ToolPatterns::new(&self.allowed_tools)
            .map_err(|error| (format!("agents[{index}] ('{}').allowed_tools", self.name), error.to_string()))?;
        Ok(())
    }
}

/// Checks agent names are unique.
pub(crate) fn check_agents(agents: &[AgentConfig]) -> Result<(), (String, String)> {
    for (index, agent) in agents.iter().enumerate() {
        agent.check(index)?;
        if agents[..index].iter().any(|earlier| earlier.name == agent.name) {
            return Err((format!("agents[{index}].name"), format!("'{}' is already an agent's name", agent.name)));
        }
    }
    Ok(())
}
