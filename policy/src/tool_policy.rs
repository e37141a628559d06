//! A tool's policy: how risky it is, whether a person must approve a call,
//! how long a call may run, and what happens when a secret shows up.
//!
//! Four layers can say something about a tool. Each field is resolved on its
//! own, from the highest layer that sets it:
//!
//! 1. `security.tool_policies."<namespaced name>"`: the user pinned this tool;
//! 2. the server's `default_policy`: the user pinned the whole server;
//! 3. the server's own annotations: `destructiveHint: true` means high risk,
//!    approval always; `readOnlyHint: true` means low risk, approval never.
//!    A server claiming both is misconfigured, and Warden fails closed: the
//!    destructive reading wins;
//! 4. Warden's defaults: medium risk, approval unless auto-approved, 60 s,
//!    secrets redacted.
//!
//! Field by field matters: a user who pins only `timeout = 120` for a server
//! still gets the annotations' risk for each of its tools. Every resolved
//! field remembers its layer, so `warden tools --policy` can say why a tool
//! asks for approval.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How much harm a call can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads, lists, computes.
    Low,
    /// Changes something that can be undone, or nobody said.
    Medium,
    /// Deletes, overwrites, spends, sends.
    High,
}

/// When a person must approve a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Never ask.
    Never,
    /// Ask every time; grants and auto-approval do not apply.
    Always,
    /// Ask unless auto-approval is on or a grant covers the call.
    UnlessAutoApproved,
}

/// What leak detection does for a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeakAction {
    /// Secrets in results are replaced by `[REDACTED:<kind>]`; a secret in
    /// the arguments stops the call.
    Redact,
    /// Like `redact`, and a result holding a secret is refused as a whole.
    Block,
    /// No scanning (for tools whose job is handling credentials).
    Off,
}

/// What one layer says; any field may be left to the layers below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyLayer {
    /// Risk tier.
    pub risk: Option<Risk>,
    /// When to ask a person.
    pub approval: Option<Approval>,
    /// The longest a call may run, in seconds.
    pub timeout: Option<f64>,
    /// What leak detection does.
    pub leaks: Option<LeakAction>,
}

/// A policy layer's value that serde accepts and Warden cannot use.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The timeout is not a positive number of seconds up to a day.
    #[error("timeout = {0} is not a number of seconds between 0 and 86400 (one day)")]
    Timeout(f64),
}

impl PolicyLayer {
    /// Checks values serde cannot: the timeout must be a positive number of
    /// seconds. The message says what was found and what is expected.
    pub fn validate(&self) -> Result<(), PolicyError> {
        match self.timeout {
            Some(seconds) if !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0) => {
                Err(PolicyError::Timeout(seconds))
            }
            _ => Ok(()),
        }
    }
}

/// The hints a server gave about a tool (MCP `ToolAnnotations`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
}

impl ToolHints {
    /// The layer these hints make: see the module doc.
    pub fn layer(&self) -> PolicyLayer {
        if self.destructive == Some(true) {
            // Checked first: a tool that claims both is treated as destructive.
            return PolicyLayer { risk: Some(Risk::High), approval: Some(Approval::Always), ..PolicyLayer::default() };
        }
        if self.read_only == Some(true) {
            return PolicyLayer { risk: Some(Risk::Low), approval: Some(Approval::Never), ..PolicyLayer::default() };
        }
        PolicyLayer::default()
    }
}

/// Where a resolved field came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    /// `security.tool_policies."<name>"`.
    ToolOverride,
    /// The server's `default_policy`.
    ServerDefault,
    /// The server's annotations.
    Annotations,
    /// Warden's default.
    WardenDefault,
}

impl fmt::Display for PolicySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicySource::ToolOverride => "security.tool_policies",
            PolicySource::ServerDefault => "server default_policy",
            PolicySource::Annotations => "server annotations",
            PolicySource::WardenDefault => "Warden default",
        })
    }
}

/// A value and the layer it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Its layer.
    pub source: PolicySource,
}

/// The bottom layer, which sets every field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicyDefaults {
    /// Default risk.
    pub risk: Risk,
    /// Default approval.
    pub approval: Approval,
    /// Default timeout.
    pub timeout: Duration,
    /// Default leak action.
    pub leaks: LeakAction,
}

/// Warden's defaults: medium, unless auto-approved, 60 s, redact.
impl Default for PolicyDefaults {
    fn default() -> Self {
        PolicyDefaults {
            risk: Risk::Medium,
            approval: Approval::UnlessAutoApproved,
            timeout: Duration::from_secs(60),
            leaks: LeakAction::Redact,
        }
    }
}

/// A tool's policy with every field's origin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ResolvedPolicy {
    /// Risk tier.
    pub risk: Sourced<Risk>,
    /// When to ask.
    pub approval: Sourced<Approval>,
    /// Call time limit.
    #[serde(serialize_with = "seconds")]
    pub timeout: Sourced<Duration>,
    /// Leak detection.
    pub leaks: Sourced<LeakAction>,
}

fn seconds<S: serde::Serializer>(timeout: &Sourced<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
    Sourced { value: timeout.value.as_secs_f64(), source: timeout.source }.serialize(serializer)
}

/// Resolves a tool's policy from its layers, highest first (see the module
/// doc). Layers that are absent are `None`.
pub fn resolve_policy(
    tool_override: Option<&PolicyLayer>,
    server_default: Option<&PolicyLayer>,
    hints: ToolHints,
    defaults: &PolicyDefaults,
) -> ResolvedPolicy {
    let annotations = hints.layer();
    let layers = [
        (tool_override, PolicySource::ToolOverride),
        (server_default, PolicySource::ServerDefault),
        (Some(&annotations), PolicySource::Annotations),
    ];
    fn pick<T: Copy>(
        layers: &[(Option<&PolicyLayer>, PolicySource)],
        field: impl Fn(&PolicyLayer) -> Option<T>,
        default: T,
    ) -> Sourced<T> {
        layers
            .iter()
            .find_map(|(layer, source)| layer.and_then(&field).map(|value| Sourced { value, source: *source }))
            .unwrap_or(Sourced { value: default, source: PolicySource::WardenDefault })
    }
    ResolvedPolicy {
        risk: pick(&layers, |layer| layer.risk, defaults.risk),
        approval: pick(&layers, |layer| layer.approval, defaults.approval),
        // `validate` keeps configured timeouts positive and finite.
        timeout: pick(&layers, |layer| layer.timeout.map(Duration::from_secs_f64), defaults.timeout),
        leaks: pick(&layers, |layer| layer.leaks, defaults.leaks),
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        })
    }
}

impl fmt::Display for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Approval::Never => "never",
            Approval::Always => "always",
            Approval::UnlessAutoApproved => "unless_auto_approved",
        })
    }
}

impl fmt::Display for LeakAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LeakAction::Redact => "redact",
            LeakAction::Block => "block",
            LeakAction::Off => "off",
        })
    }
}

#[cfg(test)]
mod tests;
