//! Step 2 of a call: what it must pass before it is sent.
//!
//! The agent's allowlist, leak detection on the arguments (a secret about
//! to leave stops the call), then approval — decided right here from the
//! gate's published view when no person is needed, sent to the PolicyGate
//! when one is.
//!
//! Running this in the caller's task keeps the gate off the path of calls
//! that need no approval: a policy check costs a few hash lookups and a
//! scan, not a mailbox round trip.

use ractor::ActorRef;
use serde_json::Value;
use tracing::Instrument as _;
use warden_policy::{approval_need, ApprovalNeed, AutoApproval, LeakAction, LeakScanner, ResolvedPolicy};
use warden_protocol::{json_len_hint, run_heavy};

use std::sync::Arc;

use crate::approver::{ApprovalRequest, Approver};
use crate::audit::{Decision, LeakNote};
use crate::error::CallError;
use crate::policy_gate::{ApprovalOutcome, GateMsg, GateView};
use crate::policy_rules::{AgentRules, PolicyRules};
use crate::tickets::{fresh_ticket, CastOnDrop};

/// Refuses a tool outside `agent`'s allowlist (no agent: the host itself,
/// which may use every tool).
pub(crate) fn check_allowed(rules: &PolicyRules, agent: Option<&str>, name: &str) -> Result<(), CallError> {
    let Some(agent) = agent else { return Ok(()) };
    if agent_rules(rules, agent)?.allowed_tools.matches(name) {
        Ok(())
    } else {
        let glob = match rules.names.split(name) {
            Some((server, _)) => format!("{server}{}*", rules.names.separator),
            None => name.to_string(),
        };
        Err(CallError::NotAllowed { agent: agent.to_string(), name: name.to_string(), glob })
    }
}

/// The rules of the agent named `agent`, or an error naming the agents
/// that are configured.
pub(crate) fn agent_rules<'a>(rules: &'a PolicyRules, agent: &str) -> Result<&'a AgentRules, CallError> {
    rules.agent(agent).ok_or_else(|| CallError::UnknownAgent {
        agent: agent.to_string(),
        known: rules.agent_names().map(str::to_string).collect(),
    })
}

/// Which call is being admitted.
pub(crate) struct Called<'a> {
    /// The namespaced tool name.
    pub(crate) name: &'a str,
    /// Its server.
    pub(crate) server: &'a str,
    /// The agent it is made for.
    pub(crate) agent: Option<&'a str>,
    /// Who decides for this call instead of the host's approver.
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

/// Everything a call must pass before it is sent; what let it through (for
/// the audit record). Secrets found in the arguments are added to `leaks`.
pub(crate) async fn admit(
    rules: &PolicyRules,
    tokens: Option<&LeakScanner>,
    view: &GateView,
    gate: &ActorRef<GateMsg>,
    called: &Called<'_>,
    arguments: &Value,
    policy: &ResolvedPolicy,
    leaks_found: &mut Vec<LeakNote>,
) -> Result<Decision, CallError> {
    let Called { name, agent, .. } = *called;
    if policy.leaks.value != LeakAction::Off {
        // Large arguments are scanned off the worker (`run_heavy`).
        let leaks = run_heavy(json_len_hint(arguments), || {
            let leaks = rules.scanner.find_in_json(arguments);
            match tokens {
                Some(tokens) if leaks.is_empty() => tokens.find_in_json(arguments),
                _ => leaks,
            }
        });
        if !leaks.is_empty() {
            // Each kind once, in the order found (a secret at /a and /c
            // with another at /b is still named once).
            let mut kinds: Vec<String> = Vec::new();
            for leak in &leaks {
                if !kinds.contains(&leak.kind) {
                    kinds.push(leak.kind.clone());
                }
            }
            leaks_found.extend(leaks.iter().map(|leak| LeakNote {
                kind: leak.kind.clone(),
                pointer: leak.path.clone(),
                action: "blocked",
            }));
            let paths = leaks.into_iter().map(|leak| leak.path).collect();
            tracing::warn!(tool = %name, agent = ?agent, kinds = ?kinds, "call blocked: secret in arguments");
            return Err(CallError::SecretInArguments { name: name.to_string(), kinds, paths });
        }
    }
    let auto = rules.auto_approval(agent).or_else(|| view.session_auto_approve.then_some(AutoApproval::Session));
    let reason = match approval_need(policy, name, agent, auto, &view.grants, tokio::time::Instant::now().into_std()) {
        ApprovalNeed::NotNeeded => {
            tracing::debug!(tool = %name, agent = ?agent, "runs without approval (approval = never)");
            return Ok(Decision::NotNeeded);
        }
        // Per call, so debug: the audit log has every call's decision.
        ApprovalNeed::AutoApproved(why) => {
            tracing::debug!(tool = %name, agent = ?agent, "auto-approved: {why}");
            return Ok(Decision::Auto { why: why.describe() });
        }
        ApprovalNeed::Granted { grant } => {
            tracing::debug!(tool = %name, agent = ?agent, grant, "approved by grant {grant}");
            return Ok(Decision::Grant { grant });
        }
        ApprovalNeed::Ask { reason } => reason,
    };
    // Boxed: waiting for a person is rare next to the calls that need
    // none, and its future would make every call's future larger.
    Box::pin(ask_person(rules, gate, called, arguments, policy, reason)).await
}

/// Asks the PolicyGate, which asks a person (or the call's approver), and
/// waits for the answer. Dropped while waiting, the request is withdrawn.
async fn ask_person(
    rules: &PolicyRules,
    gate: &ActorRef<GateMsg>,
    called: &Called<'_>,
    arguments: &Value,
    policy: &ResolvedPolicy,
    reason: String,
) -> Result<Decision, CallError> {
    let Called { name, server, agent, .. } = *called;
    let mut shown = arguments.clone();
    rules.scanner.redact_json(&mut shown);
    let call = ApprovalRequest {
        id: 0, // numbered by the gate
        tool: name.to_string(),
        server: server.to_string(),
        agent: agent.map(str::to_string),
        risk: policy.risk.value,
        arguments: shown,
        reason: reason.clone(),
        every_time: policy.approval.value == warden_policy::Approval::Always,
        requested_at: std::time::SystemTime::now(),
    };
    let approver = called.approver.clone();
    // Dropped while waiting (the caller gave up), the guard withdraws the
    // request, so no queue goes on listing a call nobody waits for.
    let ticket = fresh_ticket();
    let withdraw = CastOnDrop::new(gate, GateMsg::Withdraw { ticket });
    let waiting = tracing::info_span!("approval wait", warden.approval_reason = %reason);
    let outcome =
        gate.call(|reply| GateMsg::RequestApproval { call, ticket, approver, reply }, None).instrument(waiting).await;
    withdraw.disarm();
    match outcome {
        Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::Approved { by, grant })) => {
            Ok(Decision::Approved { by, grant })
        }
        Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::Denied { by, reason })) => {
            Err(CallError::ApprovalDenied { name: name.to_string(), by, reason })
        }
        Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::TimedOut { after })) => {
            Err(CallError::ApprovalTimedOut { name: name.to_string(), after })
        }
        Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::NoApprover)) => {
            Err(CallError::NoApprover { name: name.to_string(), reason })
        }
        // The gate is gone (Warden is shutting down): nobody can approve.
        Ok(_) | Err(_) => Err(CallError::NoApprover { name: name.to_string(), reason }),
    }
}
