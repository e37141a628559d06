//! The `[sampling]` model, and one sampling request from a server through
//! approval to the endpoint and back.
//!
//! Human in the loop, as the spec asks: with `approval = "always"` (the
//! default) every request goes to the approver (the host's, the daemon's
//! queue) as an approval request for `sampling/createMessage` showing the
//! server, the call it came during, the model and the messages;
//! `unless_auto_approved` skips it when `security.auto_approve` is on;
//! `never` skips it. With `review_results = true` the completion is put
//! to the approver too before the server gets it. A denial, a timeout or
//! no approver is an error to the server (code -1, "the user rejected
//! the request", as the spec's example uses) saying which.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use ractor::ActorRef;
use serde_json::{json, Value};
use warden_config::SamplingConfig;
use warden_policy::Risk;
use warden_protocol::ErrorCode;

use super::sampling;
use super::{AskPolicy, During};
use crate::approver::ApprovalRequest;
use crate::chat::{Answer, ChatClient};
use crate::policy_gate::{ApprovalOutcome, GateMsg};
use crate::tickets::{fresh_ticket, CastOnDrop};

/// The error code of a request a person (or the policy) refused.
const REJECTED: ErrorCode = ErrorCode(-1);

/// The configured model and who may use it.
pub(crate) struct Sampler {
    config: SamplingConfig,
    chat: ChatClient,
    /// Set once the PolicyGate runs (it starts after the servers' tree).
    gate: OnceLock<ActorRef<GateMsg>>,
}

impl Sampler {
    /// The `[sampling]` table's model, when it names an endpoint;
    /// `Err` says why its URL or key cannot be used.
    pub(crate) fn of_config(
        config: &SamplingConfig,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Result<Sampler, String>> {
        if !config.enabled() {
            return None;
        }
        let key = config.api_key_env.as_deref().and_then(lookup);
        let timeout = Duration::from_secs_f64(config.timeout_secs);
        Some(ChatClient::new(&config.completions_url(), key.as_deref(), timeout).map(|chat| Sampler {
            config: config.clone(),
            chat,
            gate: OnceLock::new(),
        }))
    }

    /// Whether the endpoint calls tools (`[sampling] tools`).
    pub(crate) fn tools(&self) -> bool {
        self.config.tools
    }

    pub(crate) fn attach_gate(&self, gate: ActorRef<GateMsg>) {
        let _ = self.gate.set(gate);
    }

    /// One request, start to end: its result, or the error the server gets.
    pub(crate) async fn sample(
        &self,
        rules: &dyn AskPolicy,
        server: &str,
        params: Option<&Value>,
        during: Option<&During>,
    ) -> Result<Value, (ErrorCode, String)> {
        let prepared = sampling::prepare(&self.config, params, &|text| rules.redact(text))
            .map_err(|problem| (ErrorCode::INVALID_PARAMS, problem))?;
        let tool = during.map(|call| call.tool.as_str());
        for note in &prepared.notes {
            tracing::info!(server, tool, "sampling: {note}");
        }
        tracing::info!(server, tool, model = %prepared.model, "a server asks the model for a completion");
        let ask = match self.config.approval.as_str() {
            "never" => false,
            "unless_auto_approved" => !rules.auto_approve(),
            _ => true,
        };
        if ask {
            let reason = format!(
                "server '{server}' asks the model '{}' for a completion ([sampling] approval = \"{}\")",
                prepared.model, self.config.approval
            );
            self.approve(server, during, sampling::shown(&prepared), reason).await?;
        }
        let answer = match self.chat.complete(&prepared.body).await {
            Answer::Json(answer) => answer,
            Answer::Unreachable(why) | Answer::Rejected(why) => {
                let message = format!("the sampling endpoint {} failed: {why}", self.config.completions_url());
                tracing::warn!(server, tool, "{message}");
                return Err((ErrorCode::INTERNAL_ERROR, message));
            }
        };
        let result =
            sampling::result_of(&answer, &prepared.model).map_err(|problem| (ErrorCode::INTERNAL_ERROR, problem))?;
        if self.config.review_results {
            let shown = json!({"model": result["model"], "completion": result["content"]["text"]});
            let reason =
                format!("review the completion for server '{server}' before it gets it ([sampling] review_results)");
            self.approve(server, during, shown, reason).await?;
        }
        tracing::info!(server, tool, model = %result["model"], "a completion went to the server");
        Ok(result)
    }

    /// Puts `shown` to the approver through the PolicyGate.
    async fn approve(
        &self,
        server: &str,
        during: Option<&During>,
        shown: Value,
        reason: String,
    ) -> Result<(), (ErrorCode, String)> {
        let Some(gate) = self.gate.get() else {
            return Err((REJECTED, "Warden is still starting: nobody can approve sampling yet".into()));
        };
        let call = ApprovalRequest {
            id: 0, // numbered by the gate
            tool: "sampling/createMessage".into(),
            server: server.to_string(),
            agent: during.and_then(|call| call.context.as_ref()).and_then(|context| context.agent.clone()),
            risk: Risk::Medium,
            arguments: shown,
            reason,
            every_time: true,
            requested_at: SystemTime::now(),
        };
        // Dropped while waiting (the server gave up), the request is withdrawn.
        let ticket = fresh_ticket();
        let withdraw = CastOnDrop::new(gate, GateMsg::Withdraw { ticket });
        let outcome = gate.call(|reply| GateMsg::RequestApproval { call, ticket, approver: None, reply }, None).await;
        withdraw.disarm();
        let refused = |why: String| Err((REJECTED, why));
        match outcome {
            Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::Approved { .. })) => Ok(()),
            Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::Denied { by, reason })) => {
                refused(format!("the sampling request was denied by {by}: {reason}"))
            }
            Ok(ractor::rpc::CallResult::Success(ApprovalOutcome::TimedOut { after })) => refused(format!(
                "nobody approved the sampling request within {} s (security.approval_timeout_secs)",
                after.as_secs_f64()
            )),
            _ => refused(format!(
                "the sampling request needs approval and no approver is attached; set [sampling] approval = \"never\" to let '{server}' sample unasked"
            )),
        }
    }
}
