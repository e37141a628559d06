//! Whether a call needs a person's approval, given its tool's policy, the
//! grants handed out so far and whether auto-approval is on.
//!
//! - `approval = never`: no question.
//! - `approval = always`: ask every time. Neither grants nor auto-approval
//!   apply: a user who marked a tool `always` (or a server that declared it
//!   destructive) wants to see every call.
//! - `approval = unless_auto_approved`: auto-approval (from config, for the
//!   agent, or switched on for the session) lets it through; else a grant
//!   that covers this tool (and this agent, when the grant names one) and has
//!   not expired; else ask.
//!
//! The answer says why, because every decision is logged and a person
//! looking at an approval prompt deserves to know what triggered it.

use std::borrow::Cow;
use std::fmt;
use std::time::Instant;

use crate::patterns::ToolPattern;
use crate::tool_policy::{Approval, ResolvedPolicy};

/// Permission, given once, for later calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Its number, for listing and revoking.
    pub id: u64,
    /// The tools it covers: one name or a glob.
    pub tools: ToolPattern,
    /// The agent it is for; `None` for every agent.
    pub agent: Option<String>,
    /// When it stops covering calls; `None` for the rest of the session.
    /// Monotonic time, so a clock change cannot stretch a grant (and tests
    /// with a paused clock can run one out).
    pub expires_at: Option<Instant>,
    /// Who handed it out (e.g. `"approver"`, `"cli user"`).
    pub granted_by: String,
}

impl Grant {
    /// Whether it covers a call of `tool` by `agent` at `now`.
    pub fn covers(&self, tool: &str, agent: Option<&str>, now: Instant) -> bool {
        !self.expired(now)
            && self.tools.matches(tool)
            && self.agent.as_deref().is_none_or(|granted| Some(granted) == agent)
    }

    /// Whether it has run out.
    pub fn expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|expiry| now >= expiry)
    }
}

/// Why auto-approval is on for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AutoApproval {
    /// `security.auto_approve = true`.
    Config,
    /// The agent's `auto_approve = true`.
    Agent(String),
    /// Switched on for this session by the host or a person.
    Session,
}

impl AutoApproval {
    /// What let the call through, in words; written out only for an agent
    /// (it names the agent), so a call let through by the config or the
    /// session allocates nothing to say so.
    pub fn describe(&self) -> Cow<'static, str> {
        match self {
            AutoApproval::Config => Cow::Borrowed("auto-approval is on in the config (security.auto_approve)"),
            AutoApproval::Agent(agent) => Cow::Owned(format!("auto-approval is on for agent '{agent}'")),
            AutoApproval::Session => Cow::Borrowed("auto-approval was switched on for this session"),
        }
    }
}

impl fmt::Display for AutoApproval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// What a call needs before it may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalNeed {
    /// The policy says never ask.
    NotNeeded,
    /// Auto-approval lets it through.
    AutoApproved(AutoApproval),
    /// A grant covers it.
    Granted {
        /// The grant's id.
        grant: u64,
    },
    /// A person must say yes.
    Ask {
        /// Why, in words for that person.
        reason: String,
    },
}

/// Decides what a call of `tool` by `agent` needs; see the module doc.
pub fn approval_need(
    policy: &ResolvedPolicy,
    tool: &str,
    agent: Option<&str>,
    auto: Option<AutoApproval>,
    grants: &[Grant],
    now: Instant,
) -> ApprovalNeed {
    let approval = policy.approval;
    let risk = policy.risk;
    match approval.value {
        Approval::Never => ApprovalNeed::NotNeeded,
        Approval::Always => ApprovalNeed::Ask {
            reason: format!(
                "'{tool}' is {} risk ({}) and its approval is 'always' ({}): every call is asked",
                risk.value, risk.source, approval.source
            ),
        },
        Approval::UnlessAutoApproved => {
            if let Some(auto) = auto {
                return ApprovalNeed::AutoApproved(auto);
            }
            if let Some(grant) = grants.iter().find(|grant| grant.covers(tool, agent, now)) {
                return ApprovalNeed::Granted { grant: grant.id };
            }
            ApprovalNeed::Ask {
                reason: format!(
                    "'{tool}' is {} risk ({}); its approval is 'unless_auto_approved' ({}), auto-approval is off and no grant covers it",
                    risk.value, risk.source, approval.source
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests;
