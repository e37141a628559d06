//! The HTTP face as one of several replicas (`crate::replicas`): the
//! session records it writes, the sessions it adopts, what it forwards,
//! and the gap it says when a client's GET stream moves to it.
//!
//! - A session's record is written before `initialize` is answered (so
//!   the client's very next request may go anywhere), after a request that
//!   changed what it keeps, and by the sweeper while the session is used.
//! - A request with a session id this front does not hold is looked up in
//!   the records; one recorded by the same identity at the same endpoint
//!   is adopted — its state taken on, its level and subscriptions asked of
//!   the servers again here — and served. Anyone else is told the session
//!   is unknown, as before.
//! - `DELETE` ends the record too, and every replica ends its copy.
//! - A client's response or cancellation that nothing here waits for is
//!   forwarded; each replica's copy of the session takes what is its own.
//! - A GET stream opened with a `Last-Event-ID` this front cannot replay
//!   after starts with a warning that events may have been missed and a
//!   `list_changed` of each list, so the client lists again instead of
//!   trusting lists that may be stale.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::sessions::{key_of, HttpSession, Sessions};
use super::{Caller, HttpFront};
use crate::session::{Kept, Outbox, Session};
use crate::view::View;
use crate::LogLevel;

/// A session's record among replicas.
#[derive(Serialize, Deserialize)]
struct Record {
    /// Whose it is: the identity's subject and the endpoint.
    subject: String,
    path: String,
    kept: Kept,
    /// The replica that wrote it (which does not apply its own again).
    by: String,
}

impl Sessions {
    /// How often the sweeper runs: a quarter of the idle limit (between
    /// 0.1 and 30 s), so a record written then never lapses in use.
    pub(super) fn sweep_every(&self) -> Duration {
        (self.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
    }

    /// Writes the record of `http` when what it keeps changed since it
    /// was last written, or always with `again` (to keep it from lapsing).
    pub(super) async fn write(&self, http: &HttpSession, again: bool) {
        let Some(replicas) = &self.replicas else { return };
        // Every request ends here: the record is taken only when it moved.
        if !again && http.written.lock().expect("session lock").0 == http.session.changes() {
            return;
        }
        let Some((kept, changes)) = http.session.kept() else { return };
        let by = replicas.name().to_string();
        let record = Record { subject: http.owner.0.clone(), path: http.owner.1.clone(), kept, by };
        let bytes = serde_json::to_vec(&record).expect("a record serialises");
        match replicas.keep(http.key.clone(), bytes, self.idle).await {
            Ok(()) => *http.written.lock().expect("session lock") = (changes, tokio::time::Instant::now()),
            Err(problem) => tracing::warn!(
                session = %http.session.who(),
                "the session's record could not be written for the other front replicas ({problem}); a request \
                 of its client that reaches another replica is told to initialize again"
            ),
        }
    }

    /// Writes again the records of the sessions used since their last
    /// write, in use now, or changed.
    pub(super) async fn write_used(&self) {
        if self.replicas.is_none() {
            return;
        }
        let due: Vec<Arc<HttpSession>> = self.lock().values().filter(|http| http.record_due()).cloned().collect();
        for http in due {
            self.write(&http, true).await;
        }
    }

    /// Takes this front's copy of the session recorded under `key` out of
    /// the table.
    fn take_key(&self, key: &str) -> Option<Arc<HttpSession>> {
        let id = self.lock().iter().find(|(_, http)| http.key == key).map(|(id, _)| id.clone())?;
        self.take(&id)
    }

    fn copy_of(&self, key: &str) -> Option<Arc<HttpSession>> {
        self.lock().values().find(|http| http.key == key).cloned()
    }

    /// Follows the other replicas (none without replicas): what one of
    /// them recorded of a session this front has a copy of is applied to
    /// the copy; a session one of them ended ends here; what one forwards
    /// goes to this front's copy of its session, answered nowhere (`closed`).
    pub(super) fn spawn_replication(self: &Arc<Self>, closed: Outbox) -> Option<tokio::task::JoinHandle<()>> {
        let replicas = self.replicas.clone()?;
        let sessions = Arc::downgrade(self);
        Some(tokio::spawn(async move {
            let (mut changed, mut forwarded) = (replicas.watch(), replicas.forwarded());
            loop {
                tokio::select! {
                    Some((key, record)) = changed.next() => {
                        let Some(sessions) = sessions.upgrade() else { return };
                        match record {
                            None => if let Some(http) = sessions.take_key(&key) {
                                tracing::info!(session = %http.session.who(), "front session ended: its client ended it on another replica");
                                http.end().await;
                            },
                            Some(bytes) => if let Some(http) = sessions.copy_of(&key) {
                                match serde_json::from_slice::<Record>(&bytes) {
                                    Ok(record) if record.by != replicas.name() => http.session.apply(record.kept),
                                    Ok(_) => {}
                                    Err(problem) => tracing::warn!("a session record another replica wrote cannot be read ({problem}); is every replica the same version?"),
                                }
                            },
                        }
                    }
                    Some((key, message)) = forwarded.next() => {
                        let Some(sessions) = sessions.upgrade() else { return };
                        if sessions.relays.abandoned(&key) {
                            continue;
                        }
                        if let Some(http) = sessions.copy_of(&key) {
                            let _ = http.session.receive(message, closed.clone());
                        }
                    }
                    else => return,
                }
            }
        }))
    }
}

impl HttpFront {
    /// The session `id` of `caller`: this front's own, or one another
    /// replica recorded for the same identity and endpoint, adopted.
    pub(super) async fn session_of(&self, id: &str, caller: &Caller) -> Option<Arc<HttpSession>> {
        if let Some(http) = self.sessions.get(id, caller.owner()) {
            return Some(http);
        }
        let record = self.recorded(id, caller).await?;
        let view = View::of(&self.front.warden, caller.agent.as_deref(), caller.server.as_deref(), self.resource_tools)
            .ok()?;
        let session = Session::numbered(Arc::clone(&self.front), view, &format!("{}, session", caller.described()));
        session.restore(&record.kept);
        let (http, fresh) = {
            let mut sessions = self.sessions.lock();
            if self.sessions.make_room(&mut sessions).is_err() {
                tracing::warn!(
                    "a session of another replica was not adopted: all {} places are in use",
                    self.sessions.max
                );
                return None;
            }
            self.sessions.insert(&mut sessions, id, session.clone(), caller.owner(), (self.keep_alive)())
        };
        if fresh {
            *http.written.lock().expect("session lock") = (session.changes(), tokio::time::Instant::now());
            tracing::info!(session = %session.who(), "front session adopted from another replica's record");
            session.restore_upstream(record.kept);
        }
        Some(http)
    }

    /// The record of session `id`, when `caller` made it.
    async fn recorded(&self, id: &str, caller: &Caller) -> Option<Record> {
        let replicas = self.sessions.replicas.as_ref()?;
        let bytes = match replicas.find(key_of(id)).await {
            Ok(found) => found?,
            Err(problem) => {
                tracing::warn!("the other front replicas' sessions cannot be read ({problem}); the client is told to initialize again");
                return None;
            }
        };
        let record: Record = match serde_json::from_slice(&bytes) {
            Ok(record) => record,
            Err(problem) => {
                tracing::warn!("a session record another replica wrote cannot be read ({problem}); is every replica the same version?");
                return None;
            }
        };
        ((record.subject.as_str(), record.path.as_str()) == caller.owner()).then_some(record)
    }

    /// Ends the session `id` of `caller` here and on every replica; false
    /// when there is no such session.
    pub(super) async fn end_session(&self, id: &str, caller: &Caller) -> bool {
        let ours = self.sessions.get(id, caller.owner()).is_some();
        let recorded = !ours && self.recorded(id, caller).await.is_some();
        if !(ours || recorded) {
            return false;
        }
        if ours {
            // Boxed: closing withdraws subscriptions upstream, a future
            // every request's would otherwise carry.
            Box::pin(self.sessions.remove(id)).await;
        }
        if let Some(replicas) = &self.sessions.replicas {
            replicas.end(key_of(id)).await;
        }
        true
    }

    /// Hands `message`, which nothing here waited for, to the other
    /// replicas' copies of the session.
    pub(super) async fn forward(&self, http: &HttpSession, message: Value) {
        if let Some(replicas) = &self.sessions.replicas {
            replicas.forward(http.key.clone(), message).await;
        }
    }
}

impl HttpSession {
    /// Starts a GET stream that follows a `Last-Event-ID` this front
    /// cannot replay after (`last`): a warning, unless the client asked
    /// for errors only, and a `list_changed` of each list it may have
    /// missed changes of.
    pub(super) fn say_gap(&self, last: &str) {
        let session = &self.session;
        let level = session.state().level;
        tracing::info!(session = %session.who(), last, "a GET stream resumed after events this front cannot replay");
        if level.is_none_or(|level| level <= LogLevel::Warning) {
            let text = format!(
                "the event stream resumed after event {last}, which this front cannot replay after (it was sent \
                 by another replica, before a restart, or is no longer kept): events may have been missed; the \
                 lists are announced as changed so you list them again"
            );
            self.push(json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "warning", "logger": "warden", "data": text}}));
        }
        let capabilities = session.capabilities(&session.inner.front.warden.snapshot());
        for list in ["tools", "resources", "prompts"] {
            if capabilities.get(list).is_some() {
                self.push(json!({"jsonrpc": "2.0", "method": format!("notifications/{list}/list_changed")}));
            }
        }
    }
}

/// The event number of `id` when this front (`tag`) gave it.
pub(super) fn own_event(id: &str, tag: &str) -> Option<u64> {
    let (given_by, number) = id.split_once('.')?;
    (given_by == tag).then(|| number.parse().ok()).flatten()
}

#[cfg(test)]
mod tests;
