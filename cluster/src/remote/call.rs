//! One call to a remote server: which node runs it, and what happens when
//! something fails on the way. This is the cluster's failure table (also
//! in `docs/cluster.md`):
//!
//! | what happened | what it means | what is done |
//! |---|---|---|
//! | NATS answers "no responders" | the node's subscription is gone: the request was never delivered | sent to the next node at once |
//! | no node serves the server | nothing to send it to | an error: not run |
//! | the connection to NATS is down (the client reconnecting) | it cannot be sent | an error at once: not run (not after the call's timeout) |
//! | the node's heartbeat lapsed while it ran the call, or the deadline passed, or NATS failed mid-call | the outcome is unknown | repeated on another node only when the tool is annotated read-only or idempotent; otherwise an error saying it may or may not have taken effect |
//! | the node answered | it ran it (or refused it, saying why) | its answer |
//!
//! Every attempt carries the same call id, so a node asked twice for one
//! call (NATS redelivery, a repeat) answers the run it had instead of
//! running the tool again. A call the actor cancels (its caller left, its
//! deadline passed) is aborted here and the node told to stop it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::connection::State;
use async_nats::{Request, RequestErrorKind};
use serde_json::{Map, Value};
use warden_protocol::{ErrorCode, ErrorObject, RequestId};

use super::Link;
use crate::metrics::AttemptOutcome;
use crate::wire::{CallReply, CallRequest, Outcome};

/// Beyond the call's own timeout, how long the reply may take to arrive.
const REPLY_GRACE: Duration = Duration::from_secs(5);

/// How often a call in flight checks that NATS is still connected.
const CONNECTION_CHECK: Duration = Duration::from_millis(200);

/// A call id unique in the cluster: the node's name, its process, and a
/// counter from a random start.
pub(crate) fn fresh_call_id(node: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
            .expect("the system has randomness");
        u64::from_le_bytes(bytes) >> 1
    });
    format!("{node}-{}-{:x}", std::process::id(), start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// Runs the actor's request `id` (`method` with `params`: a tool call, or
/// a relayed read) on a node that serves the link's server, and answers
/// the actor.
pub(crate) async fn run(
    link: Arc<Link>,
    id: RequestId,
    method: &'static str,
    params: Value,
    call_id: String,
    current: Arc<Mutex<Option<String>>>,
) {
    let outcome = attempts(&link, method, params, call_id, &current).await;
    link.answer(id, outcome);
}

async fn attempts(
    link: &Link,
    method: &'static str,
    params: Value,
    call_id: String,
    current: &Mutex<Option<String>>,
) -> Result<Value, ErrorObject> {
    let server = &link.server;
    let timeout_ms = u64::try_from(server.call_timeout.as_millis()).unwrap_or(u64::MAX);
    let from = server.names.node.clone();
    let (request, tool, repeatable) = if method == "tools/call" {
        let tool = params["name"].as_str().unwrap_or_default().to_string();
        let request = CallRequest {
            id: call_id,
            tool: tool.clone(),
            arguments: params["arguments"].as_object().cloned().unwrap_or_default(),
            meta: params["_meta"].as_object().cloned().unwrap_or_else(Map::new),
            timeout_ms,
            from,
            request: None,
        };
        let repeatable = server.repeatable(&tool);
        (request, tool, repeatable)
    } else {
        // A read: repeated elsewhere whatever happened to it.
        let meta = params["_meta"].as_object().cloned().unwrap_or_else(Map::new);
        let request = CallRequest {
            id: call_id,
            tool: String::new(),
            arguments: Map::new(),
            meta,
            timeout_ms,
            from,
            request: Some((method.to_string(), params)),
        };
        (request, method.to_string(), true)
    };
    let payload = bytes::Bytes::from(serde_json::to_vec(&request).expect("a call serialises"));
    let mut tried: Vec<String> = Vec::new();
    loop {
        let Some(node) = server.pick(&tried) else {
            let message = if tried.is_empty() {
                format!("no node serves '{}' right now; '{tool}' was not run", server.name)
            } else {
                format!("no other node serves '{}' (tried {}); '{tool}' was not run", server.name, tried.join(", "))
            };
            return Err(error(Outcome::NotRun, message));
        };
        // Requests queue in the client while NATS is away: rather than
        // wait out the call's timeout, say so now — it was not sent.
        if server.client.connection_state() != State::Connected {
            return Err(error(
                Outcome::NotRun,
                format!(
                    "the connection to NATS is down (reconnecting): '{tool}' was not sent to node {node}; try again \
                     once NATS is back"
                ),
            ));
        }
        tried.push(node.clone());
        *current.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(node.clone());
        let subject = server.names.call_on(&server.name, &node);
        let sent = Request::new().payload(payload.clone()).timeout(Some(server.call_timeout + REPLY_GRACE));
        let began = std::time::Instant::now();
        let counted = |outcome| server.metrics.attempt(&server.name, &node, outcome, began.elapsed());
        let unknown = tokio::select! {
            reply = server.client.send_request(subject, sent) => match reply {
                Ok(reply) => match relay(&node, &reply.payload) {
                    // It did not run there (the node's copy stopped, or no
                    // longer lists the tool): another node may serve it.
                    Err(refusal) if not_run(&refusal) && server.pick(&tried).is_some() => {
                        counted(AttemptOutcome::Refused);
                        tracing::info!(server = %server.name, "{}; trying another node", refusal.message);
                        continue;
                    }
                    answer => {
                        counted(AttemptOutcome::Answered);
                        return answer;
                    }
                },
                Err(failure) if failure.kind() == RequestErrorKind::NoResponders => {
                    counted(AttemptOutcome::Undelivered);
                    tracing::info!(server = %server.name, node = %node, "'{tool}' was not delivered (no responders); sending it to another node");
                    continue;
                }
                Err(failure) if failure.kind() == RequestErrorKind::TimedOut => {
                    format!("node {node} did not answer within {:?}", server.call_timeout + REPLY_GRACE)
                }
                Err(failure) => format!("NATS failed while node {node} ran it ({failure})"),
            },
            () = server.lost(&node) => format!("node {node} stopped answering its heartbeat while it ran it"),
            () = disconnected(&server.client) => format!("the connection to NATS was lost while node {node} ran it"),
        };
        counted(AttemptOutcome::Unknown);
        if repeatable {
            tracing::info!(server = %server.name, "{unknown}; repeating '{tool}' on another node: the tool is read-only or idempotent");
            continue;
        }
        return Err(error(
            Outcome::Unknown,
            format!(
                "{unknown}: '{tool}' may or may not have taken effect; it is not repeated because the tool is not \
                 annotated read-only or idempotent"
            ),
        ));
    }
}

/// Returns once the client's connection to NATS is down (checked every
/// [`CONNECTION_CHECK`]: the client reports its state, not its changes, to
/// more than one listener).
async fn disconnected(client: &async_nats::Client) {
    while client.connection_state() == State::Connected {
        tokio::time::sleep(CONNECTION_CHECK).await;
    }
}

/// The node's answer, as the actor's response.
fn relay(node: &str, payload: &[u8]) -> Result<Value, ErrorObject> {
    match serde_json::from_slice::<CallReply>(payload) {
        Ok(CallReply::Result(result)) => Ok(result),
        Ok(CallReply::Error { outcome, message }) => Err(error(outcome, format!("on node {node}: {message}"))),
        Err(problem) => {
            Err(error(Outcome::Unknown, format!("node {node} answered something that is not a call reply: {problem}")))
        }
    }
}

/// Whether a node's refusal says the call never ran there.
fn not_run(error: &ErrorObject) -> bool {
    error.data.as_ref().is_some_and(|data| data["outcome"] == "not_run")
}

fn error(outcome: Outcome, message: String) -> ErrorObject {
    let mut error = ErrorObject::new(ErrorCode::CLUSTER_CALL_FAILED, message);
    error.data = Some(serde_json::json!({ "outcome": outcome }));
    error
}
