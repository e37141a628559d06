//! Letting go of a request the actor gave up on.
//!
//! A server can accept a POST and never answer it: a wedged handler, a
//! proxy holding the connection. The actor's call timeout ends the call
//! and sends `notifications/cancelled`, but the POST would live on, holding
//! a connection and a task until the server or Warden closed it; a few
//! hundred such calls and the client is mostly dead weight. So when a
//! cancellation for a request goes out, the request's POST is dropped at
//! once (closing its connection: it cannot be reused mid-answer), and a
//! late answer is never read.
//!
//! Other requests never wait on this one: each has its own task and, while
//! this one hangs, its own connection from the pool.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Deserialize;
use tokio::sync::oneshot;

use super::lock;
use crate::jsonrpc::RequestId;

/// The requests whose POSTs are running, by id.
#[derive(Default)]
pub(super) struct InFlight(Mutex<HashMap<RequestId, oneshot::Sender<()>>>);

impl InFlight {
    /// Notes that request `id`'s POST is running; the receiver fires when
    /// it is abandoned.
    pub(super) fn start(&self, id: &RequestId) -> oneshot::Receiver<()> {
        let (abandon, abandoned) = oneshot::channel();
        lock(&self.0).insert(id.clone(), abandon);
        abandoned
    }

    /// Notes that request `id`'s POST is over.
    pub(super) fn finished(&self, id: &RequestId) {
        lock(&self.0).remove(id);
    }

    /// Abandons the POST of the request a `notifications/cancelled` in
    /// `json` names, if it is still running.
    pub(super) fn cancel_from(&self, json: &[u8]) {
        if let Some(id) = cancelled_request(json) {
            if let Some(abandon) = lock(&self.0).remove(&id) {
                let _ = abandon.send(());
            }
        }
    }
}

/// The request a `notifications/cancelled` names; `None` for any other
/// message.
fn cancelled_request(json: &[u8]) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct Cancelled<'a> {
        #[serde(borrow)]
        method: &'a str,
        params: Params,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "requestId")]
        request_id: RequestId,
    }
    let cancelled = serde_json::from_slice::<Cancelled<'_>>(json).ok()?;
    (cancelled.method == "notifications/cancelled").then_some(cancelled.params.request_id)
}
