//! A caller's side of a lane call: what became of the offer, and the wait
//! for the answer — which, dropped early, withdraws the call.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::{cancel_on, Answer, Lane};
use crate::error::CallError;
use crate::server_actor::{ServerMsg, ToolCall};

/// What became of a call offered to the lane.
pub(crate) enum Sending {
    /// It was written; wait for its answer.
    Sent(LaneWait),
    /// The connection was found gone before the call left (boxed, as a
    /// refused call is).
    Unsent(Box<CallError>),
    /// Not for the lane: the actor takes it. Boxed, so that what a caller's
    /// future holds after the offer is small (it is moved on every call).
    Refused(Box<ToolCall>),
}

/// A call in the lane, waiting for its answer.
pub(crate) struct LaneWait {
    pub(super) lane: Arc<Lane>,
    pub(super) id: i64,
    pub(super) ticket: u64,
    pub(super) answer: oneshot::Receiver<Result<Answer, CallError>>,
}

impl LaneWait {
    /// The server's answer to call `name`, or why there is none. Dropped
    /// before then, the call is withdrawn.
    pub(crate) async fn answer(self, name: &str) -> Result<Answer, CallError> {
        let mut waiting = Waiting { wait: self, answered: false };
        let outcome = (&mut waiting.wait.answer).await;
        waiting.answered = true;
        outcome.unwrap_or_else(|_| Err(waiting.wait.lane.gone(name)))
    }
}

impl Lane {
    /// Withdraws call `id` (its caller stopped waiting) and tells the
    /// server why; false when it is not in the lane.
    fn withdraw(&self, id: i64, reason: &str) -> bool {
        if self.remove(id).is_none() {
            return false;
        }
        let outbound = self.lock().outbound.clone();
        cancel_on(outbound.as_deref(), id, reason);
        true
    }

    /// Withdraws the call with `ticket` from the actor, should the actor
    /// have taken it on (else it is already over, and this does nothing).
    fn withdraw_taken_on(&self, ticket: u64) {
        if let Some(actor) = self.actor.get() {
            let _ = actor.cast(ServerMsg::CancelCall { ticket });
        }
    }

    /// A call that left the lane unanswered: its connection is gone, and it
    /// may or may not have reached the server.
    fn gone(&self, name: &str) -> CallError {
        let reason = "the connection closed".to_string();
        CallError::ServerGone { server: self.server.clone(), name: name.to_string(), reason, delivered: true }
    }
}

/// A lane call being waited for. Dropped before its answer came (the
/// caller's future was), the call is withdrawn: from the lane, or from the
/// actor that took it on (`lane/modern.rs`). Its end of the reply is closed
/// first, so an actor taking the call on after this sees it abandoned.
struct Waiting {
    wait: LaneWait,
    answered: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let LaneWait { lane, id, ticket, answer } = &mut self.wait;
        answer.close();
        tracing::debug!(server = %lane.server, id, "the caller cancelled a call");
        if !lane.withdraw(*id, "the caller cancelled the call") {
            lane.withdraw_taken_on(*ticket);
        }
    }
}
