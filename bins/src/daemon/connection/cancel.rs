//! Stopping a connection's requests: `cancel`, and a client that left.
//!
//! Every request runs wrapped so it can be aborted. Aborting drops the
//! call's future, and dropping a call is what cancels it upstream: the
//! server actor withdraws it and tells its server (`notifications/cancelled`),
//! and an approval or a question it waited on leaves the queue.
//!
//! Two things abort a request:
//! - the `cancel` op, naming the request's `id`. Only the connection's own
//!   requests can be reached, so one client cannot stop another's work by
//!   guessing ids;
//! - the client leaving (its connection ended or broke) while requests run.
//!   A client cannot be trusted to say goodbye — a `warden call` killed by
//!   SIGKILL, a host that crashed — and a call nobody will read must not
//!   hold its server, its slot, an approval in the queue, or the daemon's
//!   drain at `warden stop`. What a person asked the daemon to do (reload,
//!   approve, shut down...) runs to its end all the same: those are changes
//!   to the daemon, not work for the caller.

use std::collections::HashMap;
use std::future::Future;

use futures_util::future::{AbortHandle, Abortable};
use serde_json::Value;
use warden_protocol::{BridgeError, BridgeErrorCode as Code, BridgeRequest as Request};

use super::in_flight::Pending;
use super::Answer;

/// A running request: its place among the connection's requests, and
/// the id it was sent with (as JSON text) when it had one. A client may
/// reuse an id; `cancel` reaches the newest request sent with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Running {
    serial: u64,
    id: Option<String>,
}

/// One running request's abort handle, and whether it ends with its client.
struct Run {
    abort: AbortHandle,
    ends_with_client: bool,
}

/// The connection's running requests.
#[derive(Default)]
pub(super) struct Cancellable {
    running: HashMap<u64, Run>,
    /// The newest request sent with each id.
    by_id: HashMap<String, u64>,
    serial: u64,
}

impl Cancellable {
    /// `run`, made abortable; an aborted run is answered `cancelled`
    /// (dropping it cancels the call upstream).
    pub(super) fn wrap(
        &mut self,
        ends_with_client: bool,
        id: Option<Value>,
        run: impl Future<Output = Answer> + Send + 'static,
    ) -> Pending<Answer> {
        self.serial += 1;
        let serial = self.serial;
        let (abort, registration) = AbortHandle::new_pair();
        self.running.insert(serial, Run { abort, ends_with_client });
        let key = id.as_ref().map(Value::to_string);
        if let Some(key) = &key {
            self.by_id.insert(key.clone(), serial);
        }
        let running = Running { serial, id: key };
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
        let run = self.by_id.remove(&target.to_string()).and_then(|serial| self.running.remove(&serial));
        if let Some(run) = &run {
            run.abort.abort();
        }
        let cancelled = run.is_some();
        tracing::debug!(request = %target, cancelled, "a client cancelled a request");
        let mut result = serde_json::json!({ "cancelled": cancelled });
        if !cancelled {
            result["why_not"] =
                "no request with that `id` is running on this connection (it may have just ended)".into();
        }
        Answer::result(id, &result)
    }

    /// The client is gone: every request that was only its own work is
    /// aborted (each then ends at once, its answer unwritten). Answers how
    /// many were.
    pub(super) fn client_left(&mut self) -> usize {
        let mut aborted = 0;
        self.running.retain(|_, run| {
            if run.ends_with_client {
                run.abort.abort();
                aborted += 1;
            }
            !run.ends_with_client
        });
        self.by_id.retain(|_, serial| self.running.contains_key(serial));
        aborted
    }

    /// The request answered by `answer` no longer runs.
    pub(super) fn ended(&mut self, answer: &Answer) {
        let Some(Running { serial, id }) = &answer.ends else { return };
        self.running.remove(serial);
        if let Some(id) = id {
            if self.by_id.get(id) == Some(serial) {
                self.by_id.remove(id);
            }
        }
    }
}

/// Whether a request is work for its caller alone, to be dropped when the
/// caller leaves: calls and reads. What changes the daemon at a person's
/// word (reload, reconnect, approve, deny, answer, shutdown) is finished.
pub(super) fn ends_with_its_client(request: &Request) -> bool {
    !matches!(
        request,
        Request::Reload {}
            | Request::Reconnect { .. }
            | Request::Approve { .. }
            | Request::Deny { .. }
            | Request::Answer { .. }
            | Request::Shutdown {}
    )
}
