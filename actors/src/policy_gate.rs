//! The PolicyGate: the one owner of what changes in policy while Warden
//! runs — grants, session auto-approval, the attached approver — and the
//! place where approval requests wait.
//!
//! Most calls never reach it. The call path reads the gate's latest
//! [`GateView`] (grants and the session switch, published on a `watch` like
//! the Registry's snapshot) and decides on its own whether a call needs a
//! person. Only a call that does is sent here: the gate numbers the request,
//! hands it to the approver with a one-shot answer slot, and goes on with
//! other messages; a small task waits for the answer (or the approval
//! timeout) and casts it back. So one slow human never blocks another
//! call's approval, nor any call that needs none.
//!
//! With no approver attached, requests are denied at once: fail closed.
//! Every decision is logged with who decided and which grant it created.
//! The gate is spawned by the `Warden` handle and stopped with it; if it
//! dies, calls that need approval are denied (the call path treats a failed
//! request as a denial), calls that need none go on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::watch;
use warden_policy::{Grant, ToolPattern};

use crate::approver::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, GrantRequest};

/// What the call path reads without a message.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateView {
    /// Grants in force (expired ones are dropped when the next grant is
    /// added or listed; until then `Grant::covers` ignores them).
    pub grants: Vec<Grant>,
    /// Auto-approval switched on for this session.
    pub session_auto_approve: bool,
}

/// How an approval request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// Approved.
    Approved {
        /// Who decided.
        by: String,
        /// The grant created with it.
        grant: Option<u64>,
    },
    /// Denied.
    Denied {
        /// Who decided.
        by: String,
        /// Their reason.
        reason: String,
    },
    /// Nobody answered in time.
    TimedOut {
        /// How long it waited.
        after: Duration,
    },
    /// No approver is attached.
    NoApprover,
}

/// The PolicyGate actor.
pub(crate) struct PolicyGate;

/// What the gate starts with.
pub(crate) struct GateArgs {
    /// Who answers approval requests, if anyone.
    pub approver: Option<Arc<dyn Approver>>,
    /// How long a request may wait.
    pub approval_timeout: Duration,
    /// Where the gate publishes its view.
    pub publish: watch::Sender<Arc<GateView>>,
    /// Where request and grant numbers come from: shared with the
    /// questions servers ask, so one number names one thing waiting.
    pub ids: Arc<AtomicU64>,
    /// Where approvals asked and their ends are counted.
    pub metrics: Arc<crate::Metrics>,
}

/// Messages the gate handles.
pub(crate) enum GateMsg {
    /// Ask the approver about a call; answered when decided. The gate
    /// numbers the request and stamps its time (`id` and `requested_at` as
    /// sent are replaced).
    RequestApproval {
        /// The call.
        call: ApprovalRequest,
        /// The caller's own number for it, to withdraw it by.
        ticket: u64,
        /// Who decides instead of the attached approver (a front client
        /// that can be asked), if anyone.
        approver: Option<Arc<dyn Approver>>,
        /// Gets the outcome.
        reply: RpcReplyPort<ApprovalOutcome>,
    },
    /// The caller of the request with this ticket stopped waiting (its call
    /// was dropped): the request is withdrawn, so no approver is left
    /// holding it and no queue lists it.
    Withdraw {
        /// The caller's number for the request.
        ticket: u64,
    },
    /// An approver answered request `id` (or it timed out: `None`).
    Answered {
        /// The request.
        id: u64,
        /// The decision and who made it (a dropped answer slot is a
        /// denial by the approver); `None` when the time ran out.
        answer: Option<(ApprovalDecision, String)>,
    },
    /// Replace the approver (`None` detaches it).
    AttachApprover(Option<Arc<dyn Approver>>),
    /// Switch session auto-approval.
    SetSessionAutoApprove(bool),
    /// Add a grant directly (hosts that pre-approve).
    AddGrant {
        /// What it covers.
        grant: GrantRequest,
        /// The agent it is for, when `this_agent_only`.
        agent: Option<String>,
        /// Who handed it out.
        by: String,
        /// Gets its id, or why the pattern is bad.
        reply: RpcReplyPort<Result<u64, String>>,
    },
    /// Revoke grant `id`; answers whether it existed.
    RevokeGrant {
        /// The grant.
        id: u64,
        /// Gets whether it existed.
        reply: RpcReplyPort<bool>,
    },
}

/// The gate's state.
pub(crate) struct GateState {
    approver: Option<Arc<dyn Approver>>,
    approval_timeout: Duration,
    publish: watch::Sender<Arc<GateView>>,
    view: GateView,
    ids: Arc<AtomicU64>,
    metrics: Arc<crate::Metrics>,
    /// Requests waiting for an answer.
    waiting: HashMap<u64, Waiting>,
    /// Caller's ticket → request id, for [`GateMsg::Withdraw`].
    tickets: HashMap<u64, u64>,
}

/// One request waiting for its answer.
struct Waiting {
    call: ApprovalRequest,
    ticket: u64,
    reply: RpcReplyPort<ApprovalOutcome>,
    /// Holds the answer's receiving end until the approval timeout; aborted
    /// on withdrawal, which shows the approver the request is abandoned.
    timer: tokio::task::JoinHandle<()>,
}

impl Actor for PolicyGate {
    type Msg = GateMsg;
    type State = GateState;
    type Arguments = GateArgs;

    async fn pre_start(&self, _myself: ActorRef<GateMsg>, args: GateArgs) -> Result<GateState, ActorProcessingErr> {
        Ok(GateState {
            approver: args.approver,
            approval_timeout: args.approval_timeout,
            publish: args.publish,
            view: GateView::default(),
            ids: args.ids,
            metrics: args.metrics,
            waiting: HashMap::new(),
            tickets: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<GateMsg>,
        message: GateMsg,
        state: &mut GateState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            GateMsg::RequestApproval { call, ticket, approver, reply } => {
                state.request(&myself, call, ticket, approver, reply)
            }
            GateMsg::Withdraw { ticket } => state.withdraw(ticket),
            GateMsg::Answered { id, answer } => state.answered(id, answer),
            GateMsg::AttachApprover(approver) => state.approver = approver,
            GateMsg::SetSessionAutoApprove(on) => {
                tracing::info!(on, "session auto-approval switched");
                state.view.session_auto_approve = on;
                state.publish();
            }
            GateMsg::AddGrant { grant, agent, by, reply } => {
                let _ = reply.send(state.add_grant(&grant, None, agent, &by));
            }
            GateMsg::RevokeGrant { id, reply } => {
                let before = state.view.grants.len();
                state.view.grants.retain(|grant| grant.id != id);
                let existed = state.view.grants.len() != before;
                if existed {
                    tracing::info!(grant = id, "grant revoked");
                    state.publish();
                }
                let _ = reply.send(existed);
            }
        }
        Ok(())
    }
}

impl GateState {
    fn request(
        &mut self,
        myself: &ActorRef<GateMsg>,
        mut call: ApprovalRequest,
        ticket: u64,
        approver: Option<Arc<dyn Approver>>,
        reply: RpcReplyPort<ApprovalOutcome>,
    ) {
        let Some(approver) = approver.or_else(|| self.approver.clone()) else {
            tracing::warn!(tool = %call.tool, agent = ?call.agent, "approval needed, no approver attached: denied");
            let _ = reply.send(ApprovalOutcome::NoApprover);
            return;
        };
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        call.id = id;
        call.requested_at = SystemTime::now();
        let request = call.clone();
        tracing::info!(id, tool = %call.tool, agent = ?call.agent, reason = %call.reason, "approval requested");
        self.metrics.approval_asked();
        let (answer, receiver) = ApprovalAnswer::new();
        let timeout = self.approval_timeout;
        let gate = myself.clone();
        let timer = tokio::spawn(async move {
            let answer = match tokio::time::timeout(timeout, receiver).await {
                Ok(Ok(answer)) => Some(answer),
                // Dropped without a word: a denial now, not a timeout later
                // (which would also tell the caller nobody was there).
                Ok(Err(_)) => Some((
                    ApprovalDecision::Deny { reason: "it dropped the request without answering".into() },
                    "the approver".into(),
                )),
                Err(_) => None,
            };
            let _ = gate.cast(GateMsg::Answered { id, answer });
        });
        self.waiting.insert(id, Waiting { call, ticket, reply, timer });
        self.tickets.insert(ticket, id);
        // The approver may answer from inside this call; the answer goes
        // through the task above and comes back as a message.
        approver.request(request, answer);
    }

    fn withdraw(&mut self, ticket: u64) {
        let Some(id) = self.tickets.remove(&ticket) else { return };
        if let Some(waiting) = self.waiting.remove(&id) {
            tracing::info!(id, tool = %waiting.call.tool, "approval request withdrawn: its caller stopped waiting");
            waiting.timer.abort();
            self.metrics.approval_ended("withdrawn");
        }
    }

    fn answered(&mut self, id: u64, answer: Option<(ApprovalDecision, String)>) {
        let Some(Waiting { call, ticket, reply, .. }) = self.waiting.remove(&id) else { return };
        self.tickets.remove(&ticket);
        let outcome = match answer {
            None => {
                tracing::warn!(id, tool = %call.tool, "approval not answered in time: denied");
                ApprovalOutcome::TimedOut { after: self.approval_timeout }
            }
            Some((ApprovalDecision::Approve, by)) => {
                tracing::info!(id, tool = %call.tool, decided_by = %by, "approved once");
                ApprovalOutcome::Approved { by, grant: None }
            }
            Some((ApprovalDecision::ApproveWithGrant(grant), by)) => {
                match self.add_grant(&grant, Some(&call.tool), call.agent.clone(), &by) {
                    Ok(grant) => {
                        tracing::info!(id, tool = %call.tool, decided_by = %by, grant, "approved with a grant");
                        ApprovalOutcome::Approved { by, grant: Some(grant) }
                    }
                    Err(problem) => {
                        // A bad glob from the approver must not approve more
                        // than asked: approve this call only, say why.
                        tracing::warn!(id, tool = %call.tool, decided_by = %by, %problem, "approved once; grant refused");
                        ApprovalOutcome::Approved { by, grant: None }
                    }
                }
            }
            Some((ApprovalDecision::Deny { reason }, by)) => {
                tracing::info!(id, tool = %call.tool, decided_by = %by, %reason, "denied");
                ApprovalOutcome::Denied { by, reason }
            }
        };
        self.metrics.approval_ended(match &outcome {
            ApprovalOutcome::Approved { .. } => "approved",
            ApprovalOutcome::TimedOut { .. } => "timed_out",
            _ => "denied",
        });
        let _ = reply.send(outcome);
    }

    fn add_grant(
        &mut self,
        grant: &GrantRequest,
        requested_tool: Option<&str>,
        agent: Option<String>,
        by: &str,
    ) -> Result<u64, String> {
        let pattern = grant.tools.as_deref().or(requested_tool).ok_or("a grant needs the tools it covers")?;
        let tools = ToolPattern::new(pattern).map_err(|error| error.to_string())?;
        let now = tokio::time::Instant::now().into_std();
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        self.view.grants.retain(|grant| !grant.expired(now));
        self.view.grants.push(Grant {
            id,
            tools,
            agent: if grant.this_agent_only { agent } else { None },
            expires_at: grant.duration.map(|duration| now + duration),
            granted_by: by.to_string(),
        });
        tracing::info!(grant = id, tools = pattern, by, "grant added");
        self.publish();
        Ok(id)
    }

    fn publish(&self) {
        self.publish.send_replace(Arc::new(self.view.clone()));
    }
}
