//! A 2026-07-28 call parked on another front replica, resumed through
//! this one.
//!
//! A call whose server asked its client something waits, parked, on the
//! replica that ran it (`crate::parked`); its `requestState` names that
//! replica. The client's retry may reach any replica: one that did not
//! park the call relays the retry — the request, and who sent it at which
//! endpoint, as this replica authenticated them — to the one that did, and
//! answers with that replica's answer. The replica that parked the call
//! checks the state as it always does (its seal, its owner, its call), so
//! a relayed retry can resume nothing a direct one could not.
//!
//! A relayed retry is answered as JSON: progress on the way is not
//! carried across. A client that leaves while its retry is relayed ends
//! the call there too (a `relay:ID` forwarded to every replica). Replicas
//! trust one another's authentication: they share the cluster's NATS
//! credentials and the front's tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt as _;
use http_body_util::BodyExt as _;
use hyper::header::HeaderValue;
use hyper::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::task::AbortHandle;
use warden_protocol::ErrorCode;

use super::checks::Identity;
use super::stateless::Mirrored;
use super::{respond, rpc_error, sse, Answer, Caller, HttpFront};
use crate::parked::Parked;
use crate::replicas::{Relayed, Replicas};

/// How long a relayed retry may take: the resumed call runs on until its
/// own timeout, or until it asks its client something again.
const RELAY_LIMIT: Duration = Duration::from_secs(900);

/// What a forwarded key starts with when it ends a relayed retry.
const ABANDONED: &str = "relay:";

/// A retry, as it is relayed.
#[derive(Serialize, Deserialize)]
struct RelayedRetry {
    /// Names it among the replica's relayed retries.
    id: String,
    identity: (String, String, Option<String>),
    path: String,
    agent: Option<String>,
    server: Option<String>,
    mirrored: (Option<String>, Option<String>, Option<String>),
    message: Value,
}

/// Its answer, as it comes back.
#[derive(Serialize, Deserialize)]
struct RelayedAnswer {
    status: u16,
    body: Option<Value>,
}

/// The relayed retries running on this replica, so a client that left the
/// replica it sent one to ends it.
#[derive(Default)]
pub(super) struct Relays(Mutex<HashMap<String, AbortHandle>>);

impl Relays {
    /// Ends the relayed retry a forwarded `key` names; false when `key`
    /// names none.
    pub(super) fn abandoned(&self, key: &str) -> bool {
        let Some(id) = key.strip_prefix(ABANDONED) else { return false };
        if let Some(task) = self.0.lock().expect("relays lock").remove(id) {
            tracing::info!(relay = id, "a relayed retry ended: its client left the replica that relayed it");
            task.abort();
        }
        true
    }
}

/// Tells every replica, when dropped before `done`, that the retry it
/// names was abandoned.
struct Abandon {
    replicas: Arc<dyn Replicas>,
    key: String,
    done: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.done {
            tokio::spawn(self.replicas.forward(std::mem::take(&mut self.key), json!({})));
        }
    }
}

impl HttpFront {
    /// The answer of another replica when `message` resumes a call parked
    /// there; `None` when it is this replica's to answer.
    pub(super) async fn relayed_elsewhere(
        &self,
        caller: &Caller,
        message: &Value,
        mirrored: &Mirrored,
    ) -> Option<Answer> {
        let replicas = self.sessions.replicas.as_ref()?;
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let state = message.get("params")?.get("requestState")?.as_str()?;
        let there = Parked::replica_of(state).filter(|there| there != replicas.name())?;
        let id = crate::secret::random_hex(8).ok()?;
        let identity = &caller.identity;
        let retry = RelayedRetry {
            id: id.clone(),
            identity: (identity.subject.clone(), identity.label.clone(), identity.agent.clone()),
            path: caller.path.clone(),
            agent: caller.agent.clone(),
            server: caller.server.clone(),
            mirrored: (mirrored.version.clone(), mirrored.method.clone(), mirrored.name.clone()),
            message: message.clone(),
        };
        tracing::debug!(replica = %there, relay = %id, "a retry of a call parked on another replica, relayed there");
        let mut abandon = Abandon { replicas: Arc::clone(replicas), key: format!("{ABANDONED}{id}"), done: false };
        let request = serde_json::to_vec(&retry).expect("a retry serialises");
        let outcome = replicas.relay(there.clone(), request, RELAY_LIMIT).await;
        abandon.done = true;
        let answer = outcome.and_then(|bytes| {
            serde_json::from_slice::<RelayedAnswer>(&bytes)
                .map_err(|problem| format!("its answer is not one ({problem})"))
        });
        Some(match answer {
            Ok(RelayedAnswer { status, body: Some(body) }) => {
                let mut answer = respond(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), sse::json(&body));
                answer.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
                answer
            }
            Ok(RelayedAnswer { status, body: None }) => {
                respond(StatusCode::from_u16(status).unwrap_or(StatusCode::ACCEPTED), sse::empty())
            }
            Err(problem) => rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_PARAMS,
                &format!(
                    "the call `requestState` names waits on front replica '{there}', which could not answer \
                     ({problem}): call again without it"
                ),
            ),
        })
    }
}

/// Answers the retries other replicas relay to this one's front, until the
/// front is dropped.
pub(super) async fn answer_relayed(front: Weak<HttpFront>, replicas: Arc<dyn Replicas>) {
    let mut relayed = replicas.relayed();
    while let Some(Relayed { request, answer }) = relayed.next().await {
        let Some(front) = front.upgrade() else { return };
        let Ok(retry) = serde_json::from_slice::<RelayedRetry>(&request) else {
            tracing::warn!(
                "a relayed retry from another front replica cannot be read; is every replica the same version?"
            );
            continue;
        };
        let (subject, label, bound) = retry.identity;
        let caller = Caller {
            identity: Identity { subject, label, agent: bound },
            path: retry.path,
            agent: retry.agent,
            server: retry.server,
        };
        let (version, method, name) = retry.mirrored;
        let mirrored = Mirrored { version, method, name };
        let id = retry.id;
        let running = Arc::clone(&front);
        let task = tokio::spawn(async move {
            let answered = running.stateless(&caller, retry.message, &mirrored, false).await;
            let status = answered.status().as_u16();
            let bytes = answered.into_body().collect().await.map(|body| body.to_bytes()).unwrap_or_default();
            let body = serde_json::from_slice(&bytes).ok();
            let _ = answer.send(serde_json::to_vec(&RelayedAnswer { status, body }).expect("an answer serialises"));
        });
        let relays = &front.sessions.relays;
        relays.0.lock().expect("relays lock").insert(id.clone(), task.abort_handle());
        let weak = Arc::downgrade(&front);
        tokio::spawn(async move {
            let _ = task.await;
            if let Some(front) = weak.upgrade() {
                front.sessions.relays.0.lock().expect("relays lock").remove(&id);
            }
        });
    }
}
