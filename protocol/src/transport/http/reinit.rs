//! Opening a new session when the server forgot ours.
//!
//! A server that restarts, or drops idle sessions, answers a request that
//! carries an unknown `Mcp-Session-Id` with 404 (server-everything: 400
//! "No valid session ID"). The spec's remedy is to initialise again, so
//! the transport replays the actor's own `initialize` (same params, under a
//! private id so the actor never sees the answer), sends
//! `notifications/initialized` on the new session, and retries the request
//! once. The new session may have other tools, so the actor is then handed
//! a `notifications/tools/list_changed` as if the server had sent it, and
//! lists them again.
//!
//! Requests in flight when the session expires all fail at about the same
//! time, and must not each open a session of their own (a gateway that
//! re-initialises per failure hammers a struggling server). They queue on
//! one lock; the first re-initialises and counts it in `epoch`, and the
//! others see the count moved since they were sent and simply retry, or
//! fail with the same reason if the re-initialisation failed.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use hyper::StatusCode;

use super::{lock, Answer, Kind, Session};
use crate::jsonrpc::{Message, RequestId, Response};
use crate::transport::TransportEvent;

impl Session {
    /// Makes sure a session newer than the one a failed request was sent
    /// on (`epoch` read before sending) exists: re-initialises, unless
    /// another request already did. `Err` says why there is none; the
    /// failed request then fails with it.
    pub(super) async fn renew_session(&self, epoch: u64, status: StatusCode, body: &str) -> Result<(), String> {
        let mut last = self.renewal.lock().await;
        if self.epoch.load(Ordering::SeqCst) != epoch {
            return last.clone();
        }
        tracing::info!(server = %self.spec.server, status = %status, "the server forgot the session; initialising again");
        let outcome = self.reinitialise().await.map_err(|problem| {
            format!(
                "the server forgot our session (HTTP {}) at {}: {body}; initialising again failed: {problem}",
                status.as_u16(),
                self.spec.url
            )
        });
        *last = outcome.clone();
        // Counted only now that the new session id is in place, so a
        // request sent with it never mistakes itself for an older one.
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if outcome.is_ok() {
            self.deliver(TransportEvent::Message(Message::notification("notifications/tools/list_changed", None)));
        }
        outcome
    }

    /// Opens a new session with the actor's `initialize` and confirms it
    /// with `notifications/initialized`.
    async fn reinitialise(&self) -> Result<(), String> {
        let original = lock(&self.initialize).clone().ok_or("Warden never sent `initialize` on this connection")?;
        let epoch = self.epoch.load(Ordering::SeqCst);
        let id = RequestId::String(format!("warden-reinitialise-{epoch}"));
        let json = with_id(&original, &id)?;
        let answer = self
            .exchange(json, &Kind::Request { id, initialize: true, traceparent: None, modern: None }, Answer::Keep)
            .await
            .map_err(|failure| failure.message(&self.spec.url))?;
        match answer {
            Some(TransportEvent::Response(_)) => {}
            Some(TransportEvent::Message(Message::Response(Response { outcome: Err(error), .. }))) => {
                return Err(format!("the server refused `initialize`: {}", error.message));
            }
            _ => return Err("the server did not answer `initialize`".into()),
        }
        let initialized = Message::notification("notifications/initialized", None).to_json();
        self.exchange(Bytes::from(initialized), &Kind::Other { initialized: false }, Answer::Deliver)
            .await
            .map_err(|failure| failure.message(&self.spec.url))?;
        Ok(())
    }
}

/// `request` (a JSON-RPC request) with its id replaced by `id`.
fn with_id(request: &[u8], id: &RequestId) -> Result<Bytes, String> {
    let mut value: serde_json::Value =
        serde_json::from_slice(request).map_err(|error| format!("the remembered `initialize` is not JSON: {error}"))?;
    let id = serde_json::to_value(id).map_err(|error| error.to_string())?;
    value.as_object_mut().ok_or("the remembered `initialize` is not a JSON object")?.insert("id".into(), id);
    Ok(Bytes::from(value.to_string()))
}
