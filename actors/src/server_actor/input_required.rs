//! Multi-round-trip requests (MCP 2026-07-28): a modern server that needs
//! something to answer a call — a person's answer, a sample, the roots —
//! answers it "input required" instead of sending a request of its own.
//!
//! Warden gathers what it asked for through the same [`ClientFeatures`]
//! that answer a legacy server's own requests (so the same handlers,
//! approvals, bounds and questions queue apply, and the questions belong to
//! the call that caused them, certainly rather than by guess), then sends
//! the call again under a new id with the answers and the server's state
//! echoed byte for byte. The caller sees one ordinary call: it keeps its
//! deadline, its slot and its progress; dropping it stops the gathering.
//!
//! The answers are gathered one at a time, so a person is asked one
//! question after another rather than several at once.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use warden_protocol::{retry_params, InputRequired, Message, Request, RequestId, Response};

use crate::client_features::{ClientFeatures, During};
use crate::error::CallError;

use super::{Pending, PendingCall, ServerActorState, ServerMsg};

/// How many interim answers one call may get before Warden stops (the
/// figure the SDKs use).
const MAX_INPUT_ROUNDS: u8 = 10;

/// A call's interim answers so far.
#[derive(Default)]
pub(crate) struct InputRounds {
    rounds: u8,
    /// The server's state from the last interim answer, echoed on the retry.
    state: Option<String>,
    /// The task gathering the answers, while it runs.
    gathering: Option<AbortHandle>,
}

impl Drop for InputRounds {
    /// A call that ends (timed out, cancelled, its server down) takes its
    /// questions with it.
    fn drop(&mut self) {
        if let Some(task) = self.gathering.take() {
            task.abort();
        }
    }
}

impl InputRounds {
    /// Whether the server has no request of the call now (Warden is
    /// gathering what it asked for): nothing to tell it on a cancel.
    pub(super) fn gathering(&self) -> bool {
        self.gathering.is_some()
    }
}

impl ServerActorState {
    /// Whether `result` is an interim answer; if so the call stays pending
    /// (under a new id) while its input is gathered, and `call` is taken.
    pub(super) fn interim_answer(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        call: &mut Option<PendingCall>,
        result: &RawValue,
    ) -> bool {
        if !self.is_modern() {
            return false;
        }
        let Some(interim) = InputRequired::detect(result) else { return false };
        let mut call = call.take().expect("the caller passes a call");
        let interim = match interim {
            Ok(interim) => interim,
            Err(problem) => {
                self.input_not_given(call, format!("its `input_required` answer is malformed: {problem}"));
                return true;
            }
        };
        call.input.rounds += 1;
        if call.input.rounds > MAX_INPUT_ROUNDS {
            self.input_not_given(call, format!("it asked for input again after {MAX_INPUT_ROUNDS} rounds of answers"));
            return true;
        }
        let id = self.rekey(&call);
        let during = call.during();
        let asked = interim.input_requests.keys().cloned().collect::<Vec<_>>().join(", ");
        tracing::debug!(server = %self.name, tool = %call.call.name, round = call.input.rounds, "input required: {asked}");
        let pause = state_only_pause(call.input.rounds);
        let gather = gather(self.client.clone(), self.name.clone(), interim.input_requests, during, pause);
        let actor = myself.clone();
        let task = tokio::spawn(async move {
            let answers = gather.await;
            let _ = actor.cast(ServerMsg::InputsGathered { id, answers });
        });
        call.input.state = interim.request_state;
        call.input.gathering = Some(task.abort_handle());
        self.requests.pending.insert(id, Pending::Call(call));
        true
    }

    /// The input for call `id` is here (or cannot be had): the call goes
    /// to the server again with the answers, or ends with the reason.
    pub(super) fn inputs_gathered(&mut self, id: i64, answers: Result<Map<String, Value>, String>) {
        let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else {
            return; // It ended meanwhile (timed out, cancelled, server down).
        };
        call.input.gathering = None;
        let answers = match answers {
            Ok(answers) => answers,
            Err(problem) => {
                if let Some(Pending::Call(call)) = self.requests.pending.remove(&id) {
                    self.input_not_given(call, problem);
                }
                return;
            }
        };
        let params = retry_params(call.call.params.get(), answers, call.input.state.as_deref());
        let line = super::wire::call_line(&self.era.spoken, id, call.call.method, params.get());
        if let Some(connection) = &self.connection {
            // A failed send shows up as `Closed` from the transport.
            let _ = connection.send_json(line);
        }
    }

    pub(super) fn input_not_given(&mut self, call: PendingCall, problem: String) {
        tracing::warn!(server = %self.name, tool = %call.call.name, "MCP '{}': {problem}", self.name);
        let error = CallError::InputNotGiven { server: self.name.clone(), name: call.call.name.clone(), problem };
        self.end_call(call, Err(error));
    }
}

/// The pause before retrying an interim answer that asked for nothing but
/// carried state (the server is working on it): 50 ms, doubling to 250 ms.
fn state_only_pause(round: u8) -> Duration {
    Duration::from_millis((50u64 << round.saturating_sub(1).min(3)).min(250))
}

/// Answers each of a server's input requests through `client`, in order.
pub(super) async fn gather(
    client: Arc<ClientFeatures>,
    server: String,
    requests: Map<String, Value>,
    during: During,
    pause: Duration,
) -> Result<Map<String, Value>, String> {
    if requests.is_empty() {
        tokio::time::sleep(pause).await;
        return Ok(Map::new());
    }
    let mut answers = Map::new();
    for (key, request) in requests {
        let Some(method) = request.get("method").and_then(Value::as_str).map(str::to_string) else {
            return Err(format!("its input request '{key}' names no method"));
        };
        let params = request.get("params").cloned();
        let asked = Request { id: RequestId::String(key.clone()), method: method.clone(), params };
        let (answer, answered) = oneshot::channel();
        let reply = Box::new(move |message: Message| {
            let _ = answer.send(message);
        });
        let task = client.answer(&server, asked, Some(during.clone()), reply);
        let _stop = AbortOnDrop(task);
        match answered.await {
            Ok(Message::Response(Response { outcome: Ok(result), .. })) => {
                answers.insert(key, result);
            }
            Ok(Message::Response(Response { outcome: Err(error), .. })) => {
                return Err(format!("Warden could not answer its `{method}` request '{key}': {}", error.message))
            }
            _ => return Err(format!("its `{method}` request '{key}' was left unanswered")),
        }
    }
    Ok(answers)
}

/// Stops an answer's task when the gathering stops.
struct AbortOnDrop(Option<AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}
