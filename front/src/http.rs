//! The front's Streamable HTTP face: the daemon's `[front] listen`, or a
//! service a host mounts on its own listener (`service.rs`).
//!
//! Endpoints: `/mcp` (every server the identity may see),
//! `/mcp/servers/<name>` (one server under its own names),
//! `/mcp/agents/<agent>` (that agent's allowlist and profile; an identity
//! bound to another agent gets 403). Each request is checked in this
//! order, and the first failure answers:
//!
//! 1. who is asking (`checks::Authenticate`; the daemon: a bearer token
//!    compared in constant time against every configured token) → 401 with
//!    `WWW-Authenticate`;
//! 2. each `checks::Check` in turn; the daemon's: `Host` must name this
//!    listener or an `allowed_hosts` entry → 421 (DNS rebinding: a
//!    browser tricked into calling a loopback port sends the attacker's
//!    host name); `Origin`, when sent, must be the front's own or an
//!    `allowed_origins` entry → 403; `MCP-Protocol-Version`, when sent,
//!    must be one Warden speaks → 400 with `-32022` and the versions it
//!    speaks;
//! 3. the agent of the path against the identity's → 403;
//! 4. then the method: POST (one JSON-RPC message, at most the front's
//!    body limit → 413, read within `BODY_TIMEOUT` → 408), GET (the
//!    session's stream, `Accept: text/event-stream` → else 406), DELETE
//!    (ends the session); others 405.
//!
//! A POST in the MCP 2026-07-28 envelope has no session: it is answered
//! on its own (`http/stateless.rs`).
//!
//! `initialize` makes a session (`http/sessions.rs`) and answers its id in
//! `Mcp-Session-Id`; every later request must carry it (400 without, 404
//! for one that is unknown or expired, so clients re-initialise). A POST
//! with a notification or a response gets 202; with a request, the answer
//! as JSON, or as an SSE stream when the client accepts one and asked for
//! progress (the progress, then the answer). A client that goes away
//! before its answer cancels the request (upstream too).
//!
//! Connections: at most `http_server::MAX_CONNECTIONS`, the longest idle closed to
//! make room (a flood of silent connections keeps nobody out); request
//! headers must arrive within `HEADER_READ_TIMEOUT` (slow-loris). Nothing
//! a client sends can take the daemon down or reach another session's
//! calls.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Limited};
use hyper::header::{HeaderValue, ACCEPT};
use hyper::http::request::Parts;
use hyper::{Method, Request, StatusCode};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use warden_protocol::ErrorCode;

use super::session::{Outbox, Received, Session};
use super::view::View;
use super::{AbortOnDrop, Front};

mod answers;
pub mod checks;
#[cfg(test)]
mod properties;
mod relay;
mod replicated;
mod service;
pub(crate) mod sessions;
mod sse;
mod stateless;

use answers::{json_answer, not_found, refuse, refused, respond, rpc_error, unknown_session, Answer};
use checks::{header, Authenticate, Check, Identity};
pub use service::{BodyError, HttpFrontBuilder, McpService, RequestBody};
pub use sessions::KeepAlive;
use sessions::{Refused, Sessions};

/// How long a client may take to send a request's body.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(30);

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// One HTTP front: made by [`HttpFront::builder`] (or
/// [`HttpFront::from_config`], the daemon's `[front]`), then served on a
/// listener of its own ([`HttpFront::serve`]) or mounted as a service on
/// the host's ([`HttpFront::service`]).
pub struct HttpFront {
    front: Arc<Front>,
    authenticate: Box<dyn Authenticate>,
    checks: Vec<Box<dyn Check>>,
    resource_tools: bool,
    max_body: usize,
    sessions: Arc<Sessions>,
    keep_alive: Box<dyn Fn() -> KeepAlive + Send + Sync>,
    /// `/metrics`, `/healthz` and `/readyz`, answered before the MCP checks.
    observe: Option<crate::observe::Observe>,
    /// The outbox of a request answered without a stream: closed.
    closed_outbox: Outbox,
    /// Ends idle sessions; stopped with the front.
    _sweeper: AbortOnDrop,
    /// Ends this front's copies of sessions ended on other replicas, and
    /// takes what they forward; stopped with the front.
    _replication: Option<AbortOnDrop>,
    /// Answers the retries other replicas relay here; stopped with the front.
    _relaying: Option<AbortOnDrop>,
}

/// Who is asking, and through which endpoint.
struct Caller {
    identity: Identity,
    path: String,
    /// The agent whose allowlist and profile apply: the path's, or the
    /// one the identity is bound to.
    agent: Option<String>,
    server: Option<String>,
}

impl Caller {
    /// Who the caller is to the front, for the audit record and logs: the
    /// identity's label and the endpoint — never a secret.
    fn described(&self) -> String {
        format!("{} at {}", self.identity.label, self.path)
    }

    /// What a session (or a parked call) belongs to: the identity and
    /// the endpoint.
    fn owner(&self) -> (&str, &str) {
        (&self.identity.subject, &self.path)
    }
}

impl HttpFront {
    /// Serves `listener` until `stop` resolves, then ends every session.
    /// Connections are capped and their headers timed
    /// (`http_server`); a host with a listener of its own mounts
    /// [`HttpFront::service`] on it instead.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, stop: impl std::future::Future<Output = ()>) {
        let front = Arc::clone(&self);
        let handler: crate::http_server::Handler = Arc::new(move |request| {
            let front = Arc::clone(&front);
            let request = request.map(service::boxed);
            Box::pin(async move { front.handle(request).await })
        });
        crate::http_server::serve(listener, stop, "the MCP front", handler).await;
        self.close_sessions().await;
    }

    /// Ends every session: their calls are cancelled upstream, their
    /// subscriptions withdrawn. For a host stopping the front it mounted.
    pub async fn close_sessions(&self) {
        self.sessions.close_all().await;
    }

    async fn handle(&self, request: Request<RequestBody>) -> Answer {
        if let Some(page) = self.observe.as_ref().and_then(|observe| observe.page(&request)) {
            return crate::observe::listener::response(page);
        }
        let (parts, body) = request.into_parts();
        let caller = match self.check(&parts) {
            Ok(caller) => caller,
            Err(mut answer) => {
                // The body is not read: the connection cannot carry another request.
                answer.headers_mut().insert("connection", HeaderValue::from_static("close"));
                return answer;
            }
        };
        match parts.method {
            Method::POST => self.post(caller, parts, body).await,
            Method::GET => self.get(&caller, &parts).await,
            Method::DELETE => match session_id(&parts) {
                None => refuse(StatusCode::BAD_REQUEST, "DELETE needs the `Mcp-Session-Id` header"),
                Some(id) if self.end_session(&id, &caller).await => respond(StatusCode::NO_CONTENT, sse::empty()),
                Some(_) => unknown_session(),
            },
            _ => {
                let mut answer = refuse(StatusCode::METHOD_NOT_ALLOWED, "the MCP endpoint takes POST, GET and DELETE");
                answer.headers_mut().insert("allow", HeaderValue::from_static("GET, POST, DELETE"));
                answer
            }
        }
    }

    /// The endpoint, then who is asking, then each check in order; the
    /// first failure answers.
    fn check(&self, request: &Parts) -> Result<Caller, Answer> {
        let path = request.uri.path().trim_end_matches('/').to_string();
        let (agent_in_path, server) = match path.strip_prefix("/mcp") {
            Some("") => (None, None),
            Some(rest) => match rest.strip_prefix("/servers/") {
                Some(server) if !server.is_empty() && !server.contains('/') => (None, Some(server.to_string())),
                _ => match rest.strip_prefix("/agents/") {
                    Some(agent) if !agent.is_empty() && !agent.contains('/') => (Some(agent.to_string()), None),
                    _ => return Err(not_found(&path)),
                },
            },
            None => return Err(not_found(&path)),
        };
        let identity = self.authenticate.authenticate(request).map_err(refused)?;
        for check in &self.checks {
            check.check(request).map_err(refused)?;
        }
        let agent = match (agent_in_path, &identity.agent) {
            (Some(asked), Some(bound)) if &asked != bound => {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    &format!("this token is agent '{bound}'s; it may not act as agent '{asked}'"),
                ))
            }
            (Some(asked), _) => Some(asked),
            (None, bound) => bound.clone(),
        };
        Ok(Caller { identity, path, agent, server })
    }

    async fn post(&self, caller: Caller, request: Parts, body: RequestBody) -> Answer {
        let wants_stream = accepts(&request, "text/event-stream");
        if !(wants_stream || accepts(&request, "application/json")) {
            return refuse(StatusCode::NOT_ACCEPTABLE, "POST needs `Accept: application/json, text/event-stream`");
        }
        let session_id = session_id(&request);
        let traceparent = request.headers.get("traceparent").and_then(|value| value.to_str().ok()).map(str::to_owned);
        let mirrored = stateless::Mirrored {
            version: header(&request, VERSION_HEADER).map(str::to_owned),
            method: header(&request, "mcp-method").map(str::to_owned),
            name: header(&request, "mcp-name").map(str::to_owned),
        };
        let body = match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, self.max_body).collect()).await {
            Err(_) => return refuse(StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time"),
            Ok(Err(_)) => {
                let problem = format!("the body is longer than {} bytes (max_message_bytes)", self.max_body);
                let mut answer = refuse(StatusCode::PAYLOAD_TOO_LARGE, &problem);
                answer.headers_mut().insert("connection", HeaderValue::from_static("close"));
                return answer;
            }
            Ok(Ok(body)) => body.to_bytes(),
        };
        let mut message: Value = match serde_json::from_slice(&body) {
            Ok(message) => message,
            Err(problem) => {
                return rpc_error(StatusCode::BAD_REQUEST, ErrorCode::PARSE_ERROR, &format!("not JSON: {problem}"))
            }
        };
        // W3C trace context sent as a header continues in `_meta`, where
        // the call pipeline reads it (one the message carries wins).
        if let (Some(traceparent), Some(params)) =
            (traceparent, message.get_mut("params").and_then(Value::as_object_mut))
        {
            let meta = params.entry("_meta").or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.entry("traceparent").or_insert(Value::String(traceparent));
            }
        }
        if stateless::meta(&message).is_some_and(|meta| meta.get(warden_protocol::PROTOCOL_VERSION_KEY).is_some()) {
            // MCP 2026-07-28: no session; a session id it carries is ignored.
            return self.stateless(&caller, message, &mirrored, wants_stream).await;
        }
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            return self.initialize(&caller, message).await;
        }
        let Some(id) = session_id else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "send `initialize` first, then its `Mcp-Session-Id` header with every request",
            );
        };
        let Some(http) = self.session_of(&id, &caller).await else { return unknown_session() };
        // A stream when something may come before the answer: progress the
        // client asked for, or a question a call's server may ask a client
        // that can answer, or its roots asked of it (sent on this request's
        // stream, as it belongs to it).
        let progress = stateless::meta(&message).is_some_and(|meta| meta.get("progressToken").is_some())
            || (message.get("method").and_then(Value::as_str) == Some("tools/call") && http.session.may_be_asked());
        // Without a stream, what the request reports has nowhere to go: it
        // gets the outbox closed from the start, not a channel made for it.
        let stream = (wants_stream && progress).then(|| mpsc::channel(64));
        let outbox = stream.as_ref().map_or_else(|| self.closed_outbox.clone(), |(outbox, _)| outbox.clone());
        let request_id = message.get("id").cloned();
        // A response or a cancellation may be for another replica's call.
        let not_a_request = message.get("method").is_none() || message.get("id").is_none();
        let maybe_theirs = (self.sessions.replicas.is_some() && not_a_request).then(|| message.clone());
        match (http.session.receive(message, outbox), stream) {
            (Received::Accepted, _) => respond(StatusCode::ACCEPTED, sse::empty()),
            (Received::NotHere, _) => {
                if let Some(message) = maybe_theirs {
                    self.forward(&http, message).await;
                }
                respond(StatusCode::ACCEPTED, sse::empty())
            }
            (Received::Answered(answer), _) => json_answer(&answer),
            (Received::Request(pending), Some((outbox_of_stream, answers))) => {
                // Progress, then the answer, on this POST's stream. Dropping
                // the body (the client left) cancels the request.
                let id = request_id.unwrap_or(Value::Null);
                let sessions = Arc::clone(&self.sessions);
                let task = tokio::spawn(async move {
                    if let Some(answer) = pending.await {
                        // What the request changed is recorded before the
                        // client can take its next step elsewhere.
                        sessions.write(&http, false).await;
                        let _ = outbox_of_stream.send(answer).await;
                    }
                });
                let guard = AbortOnDrop(task.abort_handle());
                let mut answer = respond(StatusCode::OK, sse::answer_stream(answers, id, next_stream(), guard));
                answer.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
                answer
            }
            // Run in this POST's own task: dropped with it if the client leaves.
            (Received::Request(pending), None) => {
                // A JSON answer carries no progress: what is reported is dropped.
                match pending.await {
                    Some(answer) => {
                        self.sessions.write(&http, false).await;
                        json_answer(&answer)
                    }
                    // Cancelled by the client's notifications/cancelled: no answer, as the spec says.
                    None => respond(StatusCode::ACCEPTED, sse::empty()),
                }
            }
        }
    }

    async fn initialize(&self, caller: &Caller, message: Value) -> Answer {
        let view = View::of(&self.front.warden, caller.agent.as_deref(), caller.server.as_deref(), self.resource_tools);
        let view = match view {
            Ok(view) => view,
            Err(error) => return refuse(StatusCode::NOT_FOUND, &error.to_string()),
        };
        let owner = format!("{}, session", caller.described());
        let session = Session::numbered(Arc::clone(&self.front), view, &owner);
        let (outbox, _) = mpsc::channel(1);
        let Received::Answered(answer) = session.receive(message, outbox) else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "`initialize` must be a request with an id",
            );
        };
        if answer.get("error").is_some() {
            return json_answer(&answer);
        }
        match self.sessions.create(session, caller.owner(), (self.keep_alive)()) {
            Ok((id, http)) => {
                tracing::info!(session = %http.session.who(), "front session opened over HTTP");
                // Recorded before the client knows its id: its next request
                // may reach another replica.
                self.sessions.write(&http, true).await;
                let mut response = json_answer(&answer);
                if let Ok(value) = HeaderValue::from_str(&id) {
                    response.headers_mut().insert(SESSION_HEADER, value);
                }
                response
            }
            Err(Refused::Full) => {
                let max = self.sessions.max;
                tracing::warn!("refused a front session: all {max} are in use (max_sessions)");
                let problem = format!(
                    "the front's {max} sessions (max_sessions) are all in use; retry in a few seconds (one unused for 10 s makes room)"
                );
                let mut answer = refuse(StatusCode::SERVICE_UNAVAILABLE, &problem);
                answer.headers_mut().insert("retry-after", HeaderValue::from_static("10"));
                answer
            }
            Err(Refused::NoId(error)) => {
                refuse(StatusCode::INTERNAL_SERVER_ERROR, &format!("cannot make a session id: {error}"))
            }
        }
    }

    async fn get(&self, caller: &Caller, request: &Parts) -> Answer {
        if !accepts(request, "text/event-stream") {
            return refuse(
                StatusCode::NOT_ACCEPTABLE,
                "GET opens the session's stream: send `Accept: text/event-stream`",
            );
        }
        let Some(id) = session_id(request) else {
            return refuse(StatusCode::BAD_REQUEST, "GET needs the `Mcp-Session-Id` header");
        };
        let Some(http) = self.session_of(&id, caller).await else { return unknown_session() };
        let last = header(request, "last-event-id");
        let after = last.and_then(|last| replicated::own_event(last, &self.sessions.tag));
        let (stream, whole) = http.open_stream(after);
        if let Some(last) = last.filter(|_| after.is_none() || !whole) {
            http.say_gap(last);
        }
        let mut answer = respond(StatusCode::OK, sse::notice_stream(stream, self.sessions.tag.clone()));
        answer.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
        answer
    }

    /// Open sessions, for `status`.
    pub fn session_count(&self) -> usize {
        self.sessions.count()
    }
}

fn next_stream() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn session_id(request: &Parts) -> Option<String> {
    header(request, SESSION_HEADER).map(str::to_string)
}

fn accepts(request: &Parts, kind: &str) -> bool {
    match header(request, ACCEPT.as_str()) {
        None => kind == "application/json",
        Some(accept) => accept
            .split(',')
            .map(|part| part.split(';').next().unwrap_or_default().trim())
            .any(|part| part == kind || part == "*/*" || (part == "application/*" && kind.starts_with("application/"))),
    }
}
