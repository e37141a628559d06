//! A lane call the actor takes on: a 2026-07-28 call whose answer was not
//! final.
//!
//! The lane sends a modern server's plain calls past the actor
//! (`lane/modern.rs`). An interim answer — input required, or a task the
//! server made of the call — needs what only the actor has: the client
//! features that gather input, task polling, its timers. So the lane hands
//! such a call over with the answer, and from here it is one of the
//! actor's calls in flight, as if the actor had sent it: it keeps the slot
//! it took in the lane, its deadline and its caller, and the answer goes
//! through the same [`finish_call`](ServerActorState::finish_call).

use ractor::{ActorRef, RpcReplyPort};
use serde_json::value::RawValue;

use crate::error::CallError;
use crate::server_actor::lane::{Adopted, Reply};

use super::{Answer, PendingCall, Phase, ServerActorState, ServerMsg};

/// Where a call's outcome goes: a caller that sent it through the actor,
/// or one whose lane call the actor took on.
pub(super) enum CallReply {
    Actor(RpcReplyPort<Result<Box<RawValue>, CallError>>),
    Lane(Reply),
}

impl CallReply {
    pub(super) fn send(self, outcome: Result<Box<RawValue>, CallError>) {
        match self {
            CallReply::Actor(port) => {
                let _ = port.send(outcome);
            }
            CallReply::Lane(reply) => {
                let _ = reply.send(outcome.map(Answer::Raw));
            }
        }
    }
}

impl ServerActorState {
    /// Takes on `adopted`'s call, as if its answer had come to a call of
    /// the actor's own.
    pub(super) fn adopt(&mut self, myself: &ActorRef<ServerMsg>, adopted: Adopted) {
        let Adopted { call, reply, result } = adopted;
        if self.phase == Phase::Down || self.connection.is_none() {
            // Down since: the lane's calls failed, their slots with them.
            let reason = "the server is down".to_string();
            let _ = reply.send(Err(CallError::ServerGone {
                server: self.name.clone(),
                name: call.name,
                reason,
                delivered: true,
            }));
            return;
        }
        if reply.is_closed() {
            // Its caller left on the way here; the server holds no request
            // of it (it answered), so there is nothing to tell it.
            self.lane.free_slot();
            self.send_queued_calls();
            return;
        }
        let deadline = call.deadline;
        self.requests.arm_deadline_timer(myself, deadline);
        let (input, task) = Default::default();
        let reply = CallReply::Lane(reply);
        let call = PendingCall { call, reply, deadline, sent: true, input, task, cache_ticket: None };
        self.finish_call(myself, call, Ok(result));
    }
}
