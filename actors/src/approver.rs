//! Who answers "may this call run?" — the [`Approver`] a host attaches.
//!
//! The PolicyGate sends each [`ApprovalRequest`] to the approver together
//! with an [`ApprovalAnswer`], a one-shot reply the approver fills in when a
//! person (or a rule) has decided: approve once, approve and hand out a
//! grant, or deny with a reason. The approver may answer at once, from
//! another task, or from another process (the daemon's queue): nothing waits
//! inside the gate, and an answer that never comes becomes a denial when
//! `security.approval_timeout_secs` runs out. An answer dropped without a
//! word is a denial too: failing closed is the point.
//!
//! Hosts implement the trait on their own type, or pass a closure; an actor
//! of theirs is reached by casting the request and the answer to it.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use warden_policy::Risk;

/// One call waiting for a decision.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    /// Its number, for answering from elsewhere (`warden approve 7`).
    pub id: u64,
    /// The namespaced tool name.
    pub tool: String,
    /// The server that would run it.
    pub server: String,
    /// The agent asking, if the host named one.
    pub agent: Option<String>,
    /// The tool's resolved risk.
    pub risk: Risk,
    /// The arguments, with every known secret and credential shape redacted.
    pub arguments: Value,
    /// Why approval is needed.
    pub reason: String,
    /// The tool's approval is `always`: every call asks, and no grant or
    /// earlier "for this session" answer may stand in for a person.
    pub every_time: bool,
    /// When it was asked.
    #[serde(with = "unix_seconds")]
    pub requested_at: SystemTime,
}

/// A grant handed out with an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRequest {
    /// The tools it covers: `None` for the requested tool only, else a name
    /// or glob such as `fs__*`.
    pub tools: Option<String>,
    /// How long it lasts: `None` for the rest of the session.
    pub duration: Option<Duration>,
    /// Whether it is for the requesting agent only (else for every agent).
    pub this_agent_only: bool,
}

/// What an approver decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call, and let later calls the grant covers run unasked
    /// (except tools whose approval is `always`).
    ApproveWithGrant(GrantRequest),
    /// Do not run it.
    Deny {
        /// Why, for the caller (and the model) to read.
        reason: String,
    },
}

/// The reply slot for one request. Dropping it unanswered denies the call.
#[derive(Debug)]
pub struct ApprovalAnswer {
    sender: oneshot::Sender<(ApprovalDecision, String)>,
}

impl ApprovalAnswer {
    pub(crate) fn new() -> (ApprovalAnswer, oneshot::Receiver<(ApprovalDecision, String)>) {
        let (sender, receiver) = oneshot::channel();
        (ApprovalAnswer { sender }, receiver)
    }

    /// Answers; `decided_by` names who decided, for the log
    /// (e.g. `"alice at the terminal"`).
    pub fn send(self, decision: ApprovalDecision, decided_by: impl Into<String>) {
        // The call may have timed out already; then the answer is moot.
        let _ = self.sender.send((decision, decided_by.into()));
    }

    /// Whether the call stopped waiting (it timed out or its caller left).
    pub fn is_abandoned(&self) -> bool {
        self.sender.is_closed()
    }

    /// Resolves when the call stops waiting: an approver relaying the
    /// request elsewhere withdraws it.
    pub async fn abandoned(&mut self) {
        self.sender.closed().await
    }
}

/// Something that answers approval requests.
pub trait Approver: Send + Sync + 'static {
    /// Hands over one request; answer through `answer`, now or later.
    fn request(&self, request: ApprovalRequest, answer: ApprovalAnswer);
}

impl<F> Approver for F
where
    F: Fn(ApprovalRequest, ApprovalAnswer) + Send + Sync + 'static,
{
    fn request(&self, request: ApprovalRequest, answer: ApprovalAnswer) {
        self(request, answer)
    }
}

/// A host's own actor as the approver: each request is cast to it as a
/// message made from the request and its answer slot, and the actor
/// answers whenever its person has decided.
pub struct ActorApprover<M: ractor::Message> {
    actor: ractor::ActorRef<M>,
}

impl<M: ractor::Message> ActorApprover<M> {
    /// Sends requests to `actor`.
    pub fn new(actor: ractor::ActorRef<M>) -> Self {
        ActorApprover { actor }
    }
}

impl<M> Approver for ActorApprover<M>
where
    M: ractor::Message + From<(ApprovalRequest, ApprovalAnswer)>,
{
    fn request(&self, request: ApprovalRequest, answer: ApprovalAnswer) {
        // An actor that is gone drops the answer slot: a denial.
        let _ = self.actor.cast(M::from((request, answer)));
    }
}

/// Approves every request (`security.approver = "auto"`), for unattended
/// runs where the config's policies are the whole of the judgement.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprover;

impl Approver for AutoApprover {
    fn request(&self, _request: ApprovalRequest, answer: ApprovalAnswer) {
        answer.send(ApprovalDecision::Approve, "the auto-approver (security.approver = \"auto\")");
    }
}

/// Denies every request (`security.approver = "deny"`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyingApprover;

impl Approver for DenyingApprover {
    fn request(&self, _request: ApprovalRequest, answer: ApprovalAnswer) {
        answer.send(
            ApprovalDecision::Deny {
                reason: "security.approver = \"deny\" refuses every call that needs approval".into(),
            },
            "the config (security.approver = \"deny\")",
        );
    }
}

mod unix_seconds {
    use std::time::SystemTime;

    pub(super) fn serialize<S: serde::Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
        let seconds = time.duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64());
        serializer.serialize_f64(seconds)
    }
}
