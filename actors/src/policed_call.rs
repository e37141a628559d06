//! The policy checks around one call, run in the caller's task.
//!
//! Before the call: the agent's allowlist, leak detection on the arguments
//! (a secret about to leave stops the call), then approval — decided right
//! here from the gate's published view when no person is needed, sent to
//! the PolicyGate when one is. After the call: leak detection on the result
//! (secrets redacted, or the result withheld under `leaks = "block"`).
//!
//! Running this in the caller's task keeps the gate off the path of calls
//! that need no approval: a policy check costs a few hash lookups and a
//! scan, not a mailbox round trip.

use ractor::ActorRef;
use serde_json::Value;
use warden_policy::{approval_need, ApprovalNeed, AutoApproval, LeakAction, ResolvedPolicy};
use warden_protocol::{CallToolResult, ContentBlock};

use crate::approver::ApprovalRequest;
use crate::error::CallError;
use crate::policy_gate::{ApprovalOutcome, GateMsg, GateView};
use crate::policy_rules::{AgentRules, PolicyRules};

/// Refuses a tool outside `agent`'s allowlist (no agent: the host itself,
/// which may use every tool).
pub(crate) fn check_allowed(rules: &PolicyRules, agent: Option<&str>, name: &str) -> Result<(), CallError> {
    let Some(agent) = agent else { return Ok(()) };
    if agent_rules(rules, agent)?.allowed_tools.matches(name) {
        Ok(())
    } else {
        Err(CallError::NotAllowed { agent: agent.to_string(), name: name.to_string() })
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
}

/// Everything a call must pass before it is sent.
pub(crate) async fn admit(
    rules: &PolicyRules,
    view: &GateView,
    gate: &ActorRef<GateMsg>,
    called: &Called<'_>,
    arguments: &Value,
    policy: &ResolvedPolicy,
) -> Result<(), CallError> {
    let Called { name, server, agent } = *called;
    if policy.leaks.value != LeakAction::Off {
        let leaks = rules.scanner.find_in_json(arguments);
        if !leaks.is_empty() {
            // Each kind once, in the order found (a secret at /a and /c
            // with another at /b is still named once).
            let mut kinds: Vec<String> = Vec::new();
            for leak in &leaks {
                if !kinds.contains(&leak.kind) {
                    kinds.push(leak.kind.clone());
                }
            }
            let paths = leaks.into_iter().map(|leak| leak.path).collect();
            tracing::warn!(tool = %name, agent = ?agent, kinds = ?kinds, "call blocked: secret in arguments");
            return Err(CallError::SecretInArguments { name: name.to_string(), kinds, paths });
        }
    }
    let auto = rules.auto_approval(agent).or_else(|| view.session_auto_approve.then_some(AutoApproval::Session));
    let reason = match approval_need(policy, name, agent, auto, &view.grants, tokio::time::Instant::now().into_std()) {
        ApprovalNeed::NotNeeded => {
            tracing::debug!(tool = %name, agent = ?agent, "runs without approval (approval = never)");
            return Ok(());
        }
        ApprovalNeed::AutoApproved(why) => {
            tracing::info!(tool = %name, agent = ?agent, "auto-approved: {why}");
            return Ok(());
        }
        ApprovalNeed::Granted { grant } => {
            tracing::info!(tool = %name, agent = ?agent, grant, "approved by grant {grant}");
            return Ok(());
        }
        ApprovalNeed::Ask { reason } => reason,
    };
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
        requested_at: std::time::SystemTime::now(),
    };
    let outcome = gate.call(|reply| GateMsg::RequestApproval { call, reply }, None).await;
    match outcome {
        Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::Approved { .. })) => Ok(()),
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

/// Leak detection on a result: secrets redacted in place, or the whole
/// result withheld under `leaks = "block"`.
pub(crate) fn police_result(
    rules: &PolicyRules,
    policy: &ResolvedPolicy,
    name: &str,
    result: CallToolResult,
) -> CallToolResult {
    if policy.leaks.value == LeakAction::Off {
        return result;
    }
    if !holds_a_secret(rules, &result) {
        return result;
    }
    let Ok(mut value) = serde_json::to_value(&result) else { return result };
    let leaks = rules.scanner.redact_json(&mut value);
    let mut kinds: Vec<String> = leaks.into_iter().map(|leak| leak.kind).collect();
    kinds.sort();
    kinds.dedup();
    if policy.leaks.value == LeakAction::Block {
        tracing::warn!(tool = %name, kinds = ?kinds, "result withheld: it contained secrets");
        return CallToolResult {
            content: vec![ContentBlock::text(format!(
                "Warden withheld the result of '{name}': it contained {} (leaks = \"block\" for this tool).",
                kinds.join(", ")
            ))],
            structured_content: None,
            is_error: Some(true),
            extra: Default::default(),
        };
    }
    tracing::warn!(tool = %name, kinds = ?kinds, "secrets redacted from a result");
    serde_json::from_value(value).unwrap_or_else(|_| result_fallback(name, &kinds))
}

/// Whether any string of `result` holds a secret. Walks the result as it
/// is (the common case finds nothing and must stay cheap: no conversion to
/// a JSON tree, no allocation beyond the scanner's own).
fn holds_a_secret(rules: &PolicyRules, result: &CallToolResult) -> bool {
    let scanner = &rules.scanner;
    let in_map = |map: &serde_json::Map<String, Value>| {
        map.iter().any(|(key, value)| !scanner.find_in_text(key).is_empty() || !scanner.find_in_json(value).is_empty())
    };
    result.content.iter().any(|block| match block {
        ContentBlock::Text { text, extra, .. } => !scanner.find_in_text(text).is_empty() || in_map(extra),
        ContentBlock::Other(map) => in_map(map),
    }) || result.structured_content.as_ref().is_some_and(|value| !scanner.find_in_json(value).is_empty())
        || in_map(&result.extra)
}

/// A redacted result that no longer parses (a server's odd extra members)
/// is not handed over unredacted.
fn result_fallback(name: &str, kinds: &[String]) -> CallToolResult {
    CallToolResult {
        content: vec![ContentBlock::text(format!(
            "Warden withheld the result of '{name}': it contained {} and could not be redacted in place.",
            kinds.join(", ")
        ))],
        structured_content: None,
        is_error: Some(true),
        extra: Default::default(),
    }
}
