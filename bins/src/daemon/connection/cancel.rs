//! `cancel`: a client stops a request it sent on this connection.
//!
//! Requests with an `id` are wrapped so they can be aborted. Aborting drops
//! the call's future, and dropping a call is what cancels it upstream: the
//! server actor withdraws it and tells its server (`notifications/cancelled`),
//! and an approval or a question it waited on leaves the queue. Only the
//! connection's own requests can be reached, so one client cannot stop
//! another's work by guessing ids.

use std::collections::HashMap;
use std::future::Future;

use futures_util::future::{AbortHandle, Abortable};
use serde_json::Value;
use warden_protocol::{BridgeError, BridgeErrorCode as Code};

use super::in_flight::Pending;
use super::Answer;

/// A request with an `id`, which `cancel` can reach while it runs: its
/// id as JSON text, and which of the requests sent with that id it is (a
/// client may reuse an id; the newest is the one cancelled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Running {
    id: String,
    serial: u64,
}

/// The connection's requests that `cancel` can reach.
#[derive(Default)]
pub(super) struct Cancellable {
    running: HashMap<String, (u64, AbortHandle)>,
    serial: u64,
}

impl Cancellable {
    /// `run`, made cancellable when the request has an id; a cancelled
    /// run is answered `cancelled` (dropping it cancels the call upstream).
    pub(super) fn wrap(
        &mut self,
        id: Option<Value>,
        run: impl Future<Output = Answer> + Send + 'static,
    ) -> Pending<Answer> {
        let Some(key) = id.as_ref().map(Value::to_string) else { return Box::pin(run) };
        self.serial += 1;
        let (handle, registration) = AbortHandle::new_pair();
        self.running.insert(key.clone(), (self.serial, handle));
        let running = Running { id: key, serial: self.serial };
        Box::pin(async move {
            let mut answer = Abortable::new(run, registration).await.unwrap_or_else(|_| {
                let error = BridgeError::new(
                    Code::CANCELLED,
                    "cancelled at the client's request (`cancel`); a call its server had begun was cancelled there",
                );
                Answer::error(id.as_ref(), &error)
            });
            answer.ends = Some(running);
            answer
        })
    }

    /// The `cancel` op: stops the request sent with `target` as its id.
    pub(super) fn cancel(&mut self, id: Option<&Value>, target: &Value) -> Answer {
        let cancelled = match self.running.remove(&target.to_string()) {
            Some((_, handle)) => {
                handle.abort();
                true
            }
            None => false,
        };
        tracing::debug!(request = %target, cancelled, "a client cancelled a request");
        let mut result = serde_json::json!({ "cancelled": cancelled });
        if !cancelled {
            result["why_not"] =
                "no request with that `id` is running on this connection (it may have just ended)".into();
        }
        Answer::result(id, &result)
    }

    /// The request answered by `answer` no longer runs.
    pub(super) fn ended(&mut self, answer: &Answer) {
        if let Some(Running { id, serial }) = &answer.ends {
            if self.running.get(id).is_some_and(|(running, _)| running == serial) {
                self.running.remove(id);
            }
        }
    }
}
