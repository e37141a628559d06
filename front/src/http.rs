//! The front's Streamable HTTP face, on the daemon (`[front] listen`).
//!
//! Endpoints: `/mcp` (every server the identity may see),
//! `/mcp/servers/<name>` (one server under its own names),
//! `/mcp/agents/<agent>` (that agent's allowlist and profile; a token bound
//! to another agent gets 403). Each request is checked in this order, and
//! the first failure answers:
//!
//! 1. the bearer token (`Authorization: Bearer …`, compared in constant
//!    time against every configured token) → 401 with `WWW-Authenticate`;
//! 2. `Host` must name this listener (its address, `localhost` or
//!    `127.0.0.1` with its port) or an `allowed_hosts` entry → 421
//!    (DNS rebinding: a browser tricked into calling a loopback port sends
//!    the attacker's host name);
//! 3. `Origin`, when sent, must be the front's own (`http://` and the
//!    `Host` just accepted: a page the front itself served) or an
//!    `allowed_origins` entry → 403;
//! 4. the agent of the path against the token's → 403;
//! 5. `MCP-Protocol-Version`, when sent, must be one Warden speaks → 400
//!    with `-32022` and the versions it speaks;
//! 6. then the method: POST (one JSON-RPC message, at most
//!    `max_message_bytes` → 413, read within `BODY_TIMEOUT` → 408), GET
//!    (the session's stream, `Accept: text/event-stream` → else 406),
//!    DELETE (ends the session); others 405.
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

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, HOST, ORIGIN, WWW_AUTHENTICATE};
use hyper::{Method, Request, StatusCode};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use warden_config::FrontConfig;
use warden_protocol::SUPPORTED_PROTOCOL_VERSIONS;

use super::session::{code, Outbox, Received, Session};
use super::view::View;
use super::{AbortOnDrop, Front};

mod answers;
#[cfg(test)]
mod properties;
pub(crate) mod sessions;
mod sse;
mod stateless;

use answers::{json_answer, not_found, refuse, respond, rpc_error, unknown_session, Answer};
pub use sessions::KeepAlive;
use sessions::{Refused, Sessions};

/// How long a client may take to send a request's body.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(30);

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// One HTTP front.
pub struct HttpFront {
    front: Arc<Front>,
    config: FrontConfig,
    /// The `Host` values it accepts: its own address and names, and
    /// `allowed_hosts`.
    hosts: Vec<String>,
    max_body: usize,
    sessions: Arc<Sessions>,
    keep_alive: Box<dyn Fn() -> KeepAlive + Send + Sync>,
    /// `/metrics`, `/healthz` and `/readyz`, answered before the MCP checks.
    observe: crate::observe::Observe,
    /// The outbox of a request answered without a stream: closed.
    closed_outbox: Outbox,
}

/// Who is asking, and through which endpoint.
struct Caller {
    /// The index of the token it showed (`None` with `auth = "none"`).
    token: Option<usize>,
    path: String,
    agent: Option<String>,
    server: Option<String>,
}

impl Caller {
    /// Who the caller is to the front, for the audit record and logs: the
    /// token's name (or place in the list) and the endpoint — never the
    /// token itself.
    fn identity(&self, config: &warden_config::FrontConfig) -> String {
        let token = match self.token {
            Some(index) => match config.tokens.get(index).and_then(|entry| entry.name.as_deref()) {
                Some(name) => format!("token '{name}'"),
                None => format!("token #{}", index + 1),
            },
            None => "no token (auth = \"none\")".to_string(),
        };
        format!("{token} at {}", self.path)
    }
}

impl HttpFront {
    /// The HTTP face of `front`, to serve on `addr` as `config` says:
    /// bodies up to `max_body` bytes; `keep_alive` makes what an open
    /// session holds (the daemon: a guard that keeps it from exiting
    /// idle); `observe` answers `/metrics` and the health pages on the
    /// same listener.
    pub fn new(
        front: Arc<Front>,
        config: FrontConfig,
        addr: SocketAddr,
        max_body: usize,
        keep_alive: Box<dyn Fn() -> KeepAlive + Send + Sync>,
        observe: crate::observe::Observe,
    ) -> Arc<HttpFront> {
        let warden = front.warden.clone();
        let counted = Box::new(move |open| warden.metrics().set_front_sessions(open));
        let sessions = Sessions::new(config.max_sessions, config.session_idle(), counted);
        let port = addr.port();
        let mut hosts =
            vec![addr.to_string(), format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")];
        hosts.extend(config.allowed_hosts.iter().cloned());
        let (closed_outbox, _) = mpsc::channel(1);
        Arc::new(HttpFront { front, config, hosts, max_body, sessions, keep_alive, observe, closed_outbox })
    }

    /// Serves `listener` until `stop` resolves, then ends every session.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, stop: impl std::future::Future<Output = ()>) {
        let sweeper = self.sessions.spawn_sweeper();
        let front = Arc::clone(&self);
        let handler: crate::http_server::Handler = Arc::new(move |request| {
            let front = Arc::clone(&front);
            Box::pin(async move { front.handle(request).await })
        });
        crate::http_server::serve(listener, stop, "the MCP front", handler).await;
        sweeper.abort();
        self.sessions.close_all().await;
    }

    async fn handle(&self, request: Request<Incoming>) -> Answer {
        if let Some(page) = self.observe.page(&request) {
            return crate::observe::listener::response(page);
        }
        let caller = match self.check(&request) {
            Ok(caller) => caller,
            Err(mut answer) => {
                // The body is not read: the connection cannot carry another request.
                answer.headers_mut().insert("connection", HeaderValue::from_static("close"));
                return answer;
            }
        };
        match *request.method() {
            Method::POST => self.post(caller, request).await,
            Method::GET => self.get(&caller, &request),
            Method::DELETE => match session_id(&request) {
                None => refuse(StatusCode::BAD_REQUEST, "DELETE needs the `Mcp-Session-Id` header"),
                Some(id) if self.sessions.get(&id, &(caller.token, caller.path.clone())).is_some() => {
                    // Boxed: closing withdraws subscriptions upstream, a
                    // future every request's would otherwise carry.
                    Box::pin(self.sessions.remove(&id)).await;
                    respond(StatusCode::NO_CONTENT, sse::empty())
                }
                Some(_) => unknown_session(),
            },
            _ => {
                let mut answer = refuse(StatusCode::METHOD_NOT_ALLOWED, "the MCP endpoint takes POST, GET and DELETE");
                answer.headers_mut().insert("allow", HeaderValue::from_static("GET, POST, DELETE"));
                answer
            }
        }
    }

    /// Steps 1–5 of the module's list.
    fn check(&self, request: &Request<Incoming>) -> Result<Caller, Answer> {
        let path = request.uri().path().trim_end_matches('/').to_string();
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
        let token = self.token_of(request)?;
        let host = header(request, HOST.as_str()).unwrap_or_default();
        if !self.hosts.iter().any(|allowed| allowed == host) {
            tracing::warn!(host, "front request refused: Host is not this listener");
            return Err(refuse(
                StatusCode::MISDIRECTED_REQUEST,
                &format!("Host '{host}' is not this front's; add it to [front] allowed_hosts if it should be"),
            ));
        }
        if let Some(origin) = header(request, ORIGIN.as_str()) {
            if !same_origin(origin, host) && !self.config.allowed_origins.iter().any(|allowed| allowed == origin) {
                tracing::warn!(origin, "front request refused: Origin not allowed");
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    &format!("Origin '{origin}' is not allowed; add it to [front] allowed_origins if it should be"),
                ));
            }
        }
        let bound = token.and_then(|index| self.config.tokens[index].agent.clone());
        let agent = match (agent_in_path, bound) {
            (Some(asked), Some(bound)) if asked != bound => {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    &format!("this token is agent '{bound}'s; it may not act as agent '{asked}'"),
                ))
            }
            (Some(asked), _) => Some(asked),
            (None, bound) => bound,
        };
        if let Some(version) = header(request, VERSION_HEADER) {
            if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) && !warden_protocol::is_modern(version) {
                let error = super::session::unsupported_version(version);
                let mut answer = json_answer(&error);
                *answer.status_mut() = StatusCode::BAD_REQUEST;
                return Err(answer);
            }
        }
        Ok(Caller { token, path, agent, server })
    }

    /// The index of the token the request shows; 401 without a good one.
    fn token_of(&self, request: &Request<Incoming>) -> Result<Option<usize>, Answer> {
        if self.config.open() {
            return Ok(None);
        }
        let shown = header(request, AUTHORIZATION.as_str()).and_then(|value| value.strip_prefix("Bearer "));
        // Every token is compared, so the time does not say which one matched.
        let found = shown.and_then(|shown| {
            self.config.tokens.iter().enumerate().fold(None, |found, (index, entry)| {
                if crate::secret::same(shown, &entry.token) {
                    Some(index)
                } else {
                    found
                }
            })
        });
        match found {
            Some(index) => Ok(Some(index)),
            None => {
                tracing::warn!("front request refused: missing or wrong bearer token");
                let mut answer = refuse(
                    StatusCode::UNAUTHORIZED,
                    "send `Authorization: Bearer <token>` with one of the tokens in [front] tokens",
                );
                answer.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"warden\""));
                Err(answer)
            }
        }
    }

    async fn post(&self, caller: Caller, request: Request<Incoming>) -> Answer {
        let wants_stream = accepts(&request, "text/event-stream");
        if !(wants_stream || accepts(&request, "application/json")) {
            return refuse(StatusCode::NOT_ACCEPTABLE, "POST needs `Accept: application/json, text/event-stream`");
        }
        let session_id = session_id(&request);
        let traceparent = request.headers().get("traceparent").and_then(|value| value.to_str().ok()).map(str::to_owned);
        let mirrored = stateless::Mirrored {
            version: header(&request, VERSION_HEADER).map(str::to_owned),
            method: header(&request, "mcp-method").map(str::to_owned),
            name: header(&request, "mcp-name").map(str::to_owned),
        };
        let body = match tokio::time::timeout(BODY_TIMEOUT, Limited::new(request.into_body(), self.max_body).collect())
            .await
        {
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
                return rpc_error(StatusCode::BAD_REQUEST, code::PARSE_ERROR, &format!("not JSON: {problem}"))
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
        let owner = (caller.token, caller.path.clone());
        if message.get("method").and_then(Value::as_str) == Some("initialize") {
            return self.initialize(&caller, message);
        }
        let Some(id) = session_id else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "send `initialize` first, then its `Mcp-Session-Id` header with every request",
            );
        };
        let Some(http) = self.sessions.get(&id, &owner) else { return unknown_session() };
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
        match (http.session.receive(message, outbox), stream) {
            (Received::Accepted, _) => respond(StatusCode::ACCEPTED, sse::empty()),
            (Received::Answered(answer), _) => json_answer(&answer),
            (Received::Request(pending), Some((outbox_of_stream, answers))) => {
                // Progress, then the answer, on this POST's stream. Dropping
                // the body (the client left) cancels the request.
                let id = request_id.unwrap_or(Value::Null);
                let task = tokio::spawn(async move {
                    if let Some(answer) = pending.await {
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
                    Some(answer) => json_answer(&answer),
                    // Cancelled by the client's notifications/cancelled: no answer, as the spec says.
                    None => respond(StatusCode::ACCEPTED, sse::empty()),
                }
            }
        }
    }

    fn initialize(&self, caller: &Caller, message: Value) -> Answer {
        let view =
            View::of(&self.front.warden, caller.agent.as_deref(), caller.server.as_deref(), self.config.resource_tools);
        let view = match view {
            Ok(view) => view,
            Err(error) => return refuse(StatusCode::NOT_FOUND, &error.to_string()),
        };
        let owner = format!("{}, session", caller.identity(&self.config));
        let session = Session::numbered(Arc::clone(&self.front), view, &owner);
        let (outbox, _) = mpsc::channel(1);
        let Received::Answered(answer) = session.receive(message, outbox) else {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "`initialize` must be a request with an id",
            );
        };
        if answer.get("error").is_some() {
            return json_answer(&answer);
        }
        let owner = (caller.token, caller.path.clone());
        match self.sessions.create(session, owner, (self.keep_alive)()) {
            Ok((id, http)) => {
                tracing::info!(session = %http.session.who(), "front session opened over HTTP");
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

    fn get(&self, caller: &Caller, request: &Request<Incoming>) -> Answer {
        if !accepts(request, "text/event-stream") {
            return refuse(
                StatusCode::NOT_ACCEPTABLE,
                "GET opens the session's stream: send `Accept: text/event-stream`",
            );
        }
        let Some(id) = session_id(request) else {
            return refuse(StatusCode::BAD_REQUEST, "GET needs the `Mcp-Session-Id` header");
        };
        let Some(http) = self.sessions.get(&id, &(caller.token, caller.path.clone())) else { return unknown_session() };
        let last = header(request, "last-event-id").and_then(|id| id.parse().ok());
        let stream = http.open_stream(last);
        let mut answer = respond(StatusCode::OK, sse::notice_stream(stream, ()));
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

fn header<'a>(request: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|value| value.to_str().ok())
}

/// Whether `origin` is the front's own origin as the request reached it:
/// its scheme (plain `http://`: the front does not speak TLS) and `host`,
/// the `Host` already checked to be this listener's or an allowed one. A
/// page the front served is same-origin (RFC 6454), not a rebinding
/// attack: that one comes with the attacker's host in both headers.
fn same_origin(origin: &str, host: &str) -> bool {
    !host.is_empty() && origin.strip_prefix("http://").is_some_and(|authority| authority.eq_ignore_ascii_case(host))
}

fn session_id(request: &Request<Incoming>) -> Option<String> {
    header(request, SESSION_HEADER).map(str::to_string)
}

fn accepts(request: &Request<Incoming>, kind: &str) -> bool {
    match header(request, ACCEPT.as_str()) {
        None => kind == "application/json",
        Some(accept) => accept
            .split(',')
            .map(|part| part.split(';').next().unwrap_or_default().trim())
            .any(|part| part == kind || part == "*/*" || (part == "application/*" && kind.starts_with("application/"))),
    }
}
