//! Approvals asked through the front's client.
//!
//! When a call from a client that can answer form elicitations needs a
//! person, Warden asks that client — the person is there, looking at it —
//! instead of leaving the call in the daemon's queue. The question is an
//! `elicitation/create` whose message names the tool, its server, its risk
//! and why approval is needed, with the arguments (secrets redacted), and
//! whose one required field is the decision: approve once, approve for this
//! session, approve for N minutes, or deny (with an optional reason).
//!
//! The answer goes back through the PolicyGate like any approver's: same
//! timeout (`security.approval_timeout_secs`), same log line ("approved
//! once … decided_by the client of front session …"). "For this session"
//! and "for N minutes" are this session's own: remembered by the session,
//! so a later call of the same tool from the same client runs unasked,
//! while another client's calls are still asked — one client's answer
//! never approves another's calls. Tools whose approval is `always` are
//! asked every time. A decline, a dismissal, an error or an answer that
//! does not fit is a denial, saying which.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use warden_actors::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, ElicitReply, ElicitRequest};

use super::asking::{ask_client, Outbox, Session};

/// The most minutes one "approve for N minutes" may cover: a day.
const MAX_MINUTES: u64 = 24 * 60;

/// Asks one client, on one call's reply path.
pub(super) struct ClientApprover {
    pub(super) session: Session,
    pub(super) reply: Outbox,
}

impl Approver for ClientApprover {
    fn request(&self, request: ApprovalRequest, answer: ApprovalAnswer) {
        if !request.every_time && self.session.approved(&request.tool) {
            let by = format!("the client of front session {} (approved earlier for this session)", self.session.who());
            return answer.send(ApprovalDecision::Approve, by);
        }
        tokio::spawn(ask(self.session.clone(), self.reply.clone(), request, answer));
    }
}

async fn ask(session: Session, reply: Outbox, request: ApprovalRequest, mut answer: ApprovalAnswer) {
    let question = question(&request);
    let Ok(checked) = ElicitRequest::parse(Some(&question)) else {
        unreachable!("Warden's own approval form is within the schema subset")
    };
    tracing::info!(session = %session.who(), approval = request.id, tool = %request.tool, "approval asked of the front's client");
    let Some(outcome) = ask_client(&session, &reply, "elicitation/create", question, answer.abandoned()).await else {
        return;
    };
    let by = format!("the client of front session {}", session.who());
    let decision = match outcome.map(|result| ElicitRequest::reply_of(&result).map(|reply| checked.check(reply))) {
        Ok(Ok(Ok(ElicitReply::Accept(Some(content))))) => decide(&session, &request, &content),
        Ok(Ok(Ok(ElicitReply::Accept(None)))) => deny("the client accepted without a decision"),
        Ok(Ok(Ok(ElicitReply::Decline))) => deny("the client declined"),
        Ok(Ok(Ok(ElicitReply::Cancel))) => deny("the client dismissed the approval request"),
        Ok(Ok(Err(problem)) | Err(problem)) => deny(&format!("the client's answer did not fit: {problem}")),
        Err(error) => deny(&format!("the client could not be asked: {error}")),
    };
    answer.send(decision, by);
}

/// The approval question: what would run, and the decision field.
fn question(request: &ApprovalRequest) -> Value {
    let agent = request.agent.as_deref().map(|agent| format!(" for agent '{agent}'")).unwrap_or_default();
    let message = format!(
        "Warden asks: may `{}` (server '{}', {} risk) run{agent}? {}. Arguments: {}",
        request.tool, request.server, request.risk, request.reason, request.arguments
    );
    let mut choices = vec![json!({"const": "once", "title": "Approve once"})];
    if !request.every_time {
        choices.push(json!({"const": "session", "title": "Approve for this session"}));
        choices.push(json!({"const": "minutes", "title": "Approve for N minutes"}));
    }
    choices.push(json!({"const": "deny", "title": "Deny"}));
    json!({
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "title": "Decision", "oneOf": choices},
                "minutes": {"type": "integer", "title": "Minutes (with \"for N minutes\")", "minimum": 1, "maximum": MAX_MINUTES, "default": 10},
                "reason": {"type": "string", "title": "Reason (with \"deny\")"}
            },
            "required": ["decision"]
        }
    })
}

/// The decision a checked answer stands for.
fn decide(session: &Session, request: &ApprovalRequest, content: &serde_json::Map<String, Value>) -> ApprovalDecision {
    match content.get("decision").and_then(Value::as_str) {
        Some("once") => ApprovalDecision::Approve,
        Some("session") => {
            session.approve(&request.tool, None);
            ApprovalDecision::Approve
        }
        Some("minutes") => {
            let minutes = content.get("minutes").and_then(Value::as_u64).unwrap_or(10).clamp(1, MAX_MINUTES);
            session.approve(&request.tool, Some(Instant::now() + Duration::from_secs(minutes * 60)));
            ApprovalDecision::Approve
        }
        _ => {
            let reason = content.get("reason").and_then(Value::as_str).filter(|reason| !reason.is_empty());
            deny(&format!("denied by the client: {}", reason.unwrap_or("no reason given")))
        }
    }
}

fn deny(reason: &str) -> ApprovalDecision {
    ApprovalDecision::Deny { reason: reason.to_string() }
}
