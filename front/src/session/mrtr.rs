//! Multi-round-trip requests on the front: a 2026-07-28 client's call
//! whose server asks something of the client — a form, its roots, its
//! model — or that needs the client's approval.
//!
//! Such a client cannot be sent a request. Its call runs in a session of
//! its own whose outbox is read here instead of being sent: the
//! `elicitation/create`, `roots/list`, `sampling/createMessage` and
//! approval forms the front's usual askers write there become the
//! `inputRequests` of an `input_required` answer (questions asked within
//! [`GATHER`] of one another go out together), and the call waits, parked
//! ([`crate::parked`]), under a sealed `requestState`. The client's
//! retry — the same tool and arguments, with `inputResponses` and that
//! state — resumes it: each response goes to the question of its key, and
//! the front answers the retry with the call's result, or another
//! `input_required` for what the call asks next or what the retry left
//! unanswered. Progress on the way goes to whichever request is waiting.
//! A client that leaves while its request waits ends the call; one that
//! never comes back after an `input_required` leaves it parked until
//! [`PARKED_FOR`](crate::parked::PARKED_FOR) runs out.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use warden_actors::{ClientOffers, ElicitModes};
use warden_protocol::{ErrorCode, ErrorObject, CLIENT_CAPABILITIES_KEY};

use super::super::parked::{call_digest, ParkedCall};
use super::super::AbortOnDrop;
use super::{Outbox, Session};

/// How long questions asked one after another are gathered into one
/// `input_required` answer.
const GATHER: Duration = Duration::from_millis(50);

/// The id the call's own answer carries on its outbox.
const FINAL: &str = "warden-final";

impl Session {
    /// A 2026-07-28 client's `tools/call`, first or resumed.
    pub(super) async fn call_modern(&self, params: Value, reply: &Outbox) -> Result<Value, ErrorObject> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        let digest = call_digest(name, params.get("arguments").unwrap_or(&Value::Null));
        if let Some(state) = params.get("requestState") {
            let Some(state) = state.as_str() else {
                return Err(ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    "`requestState` must be the string the front gave",
                ));
            };
            let mut parked = self
                .inner
                .front
                .parked
                .resume(state, &self.inner.owner, &digest)
                .map_err(|problem| ErrorObject::new(ErrorCode::INVALID_PARAMS, problem))?;
            let responses = params.get("inputResponses").and_then(Value::as_object).cloned().unwrap_or_default();
            for (key, response) in responses {
                // A key for nothing asked is ignored, as the revision says.
                if parked.open.remove(&key).is_some() {
                    (parked.answers)(&key, response);
                }
            }
            return self.drive(parked, reply).await;
        }
        let capabilities = params.get("_meta").and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY));
        let modes = capabilities.map(ElicitModes::declared_in).unwrap_or_default();
        let offers = ClientOffers {
            roots: capabilities.and_then(|capabilities| capabilities.get("roots")).is_some(),
            sampling: capabilities.and_then(|capabilities| capabilities.get("sampling")).is_some(),
        };
        if modes == ElicitModes::default() && offers == ClientOffers::default() {
            // Nothing could be asked of it: nothing to park.
            return self.serve("tools/call", params, reply, false).await;
        }
        let call = self.alike();
        {
            let mut state = call.state();
            state.version = Some("2026-07-28".into());
            state.elicitation = modes;
            state.offers = offers;
        }
        let (outbox, messages) = mpsc::channel(64);
        let answers = {
            let call = call.clone();
            Arc::new(move |key: &str, response: Value| call.state().asked.answered(&json!(key), Ok(response)))
        };
        let task = tokio::spawn(async move {
            let outcome = call.serve("tools/call", params, &outbox, true).await;
            let last = match outcome {
                Ok(result) => super::result(json!(FINAL), result),
                Err(problem) => super::error_answer(&json!(FINAL), problem),
            };
            let _ = outbox.send(last).await;
        });
        let parked = ParkedCall {
            owner: self.inner.owner.clone(),
            digest,
            messages,
            answers,
            open: Map::new(),
            _task: AbortOnDrop(task.abort_handle()),
        };
        self.drive(parked, reply).await
    }

    /// Follows the call until its answer, or until it asks its client
    /// something (then parked, and answered `input_required`).
    async fn drive(&self, mut parked: ParkedCall, reply: &Outbox) -> Result<Value, ErrorObject> {
        // What is still open from before is asked again.
        let mut asked = parked.open.clone();
        loop {
            let message = if asked.is_empty() {
                tokio::select! {
                    message = parked.messages.recv() => message,
                    // The client left: dropping the call ends it upstream.
                    () = reply.closed() => return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the client left")),
                }
            } else {
                match tokio::time::timeout(GATHER, parked.messages.recv()).await {
                    Ok(message) => message,
                    Err(_) => break,
                }
            };
            let Some(message) = message else {
                return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the call ended without an answer"));
            };
            if message.get("id").and_then(Value::as_str) == Some(FINAL) {
                return match message.get("error") {
                    Some(error) => Err(serde_json::from_value(error.clone()).unwrap_or_else(|_| {
                        ErrorObject::new(
                            ErrorCode::INTERNAL_ERROR,
                            format!("the call failed with an error Warden cannot read: {error}"),
                        )
                    })),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            match (message.get("method").and_then(Value::as_str), message.get("id").and_then(Value::as_str)) {
                (Some(method), Some(id)) => {
                    let request =
                        json!({"method": method, "params": message.get("params").cloned().unwrap_or(json!({}))});
                    parked.open.insert(id.to_string(), request.clone());
                    asked.insert(id.to_string(), request);
                }
                (Some("notifications/cancelled"), None) => {
                    // The server stopped waiting for one of the questions.
                    if let Some(id) = message.pointer("/params/requestId").and_then(Value::as_str) {
                        parked.open.remove(id);
                        asked.remove(id);
                    }
                }
                // Progress: to the request waiting now.
                (Some(_), None) => {
                    let _ = reply.send(message).await;
                }
                _ => {}
            }
        }
        let keys: Vec<&String> = asked.keys().collect();
        tracing::info!(session = %self.who(), asked = ?keys, "a 2026-07-28 client's call waits for its input");
        let state = self
            .inner
            .front
            .parked
            .park(parked)
            .map_err(|problem| ErrorObject::new(ErrorCode::INTERNAL_ERROR, problem))?;
        Ok(json!({"resultType": "input_required", "inputRequests": asked, "requestState": state}))
    }
}
