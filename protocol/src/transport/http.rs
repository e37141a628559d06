//! The Streamable HTTP transport: one URL, one POST per message.
//!
//! MCP over HTTP has no long-lived pipe to write into. Each message Warden
//! sends becomes its own POST to the server's single endpoint, run on its
//! own task so that [`Connection::send`] never waits and many calls are in
//! flight at once (hyper-util's pool keeps the TCP connections alive between
//! them). What comes back depends on what was sent:
//!
//! - a notification or a response gets `202 Accepted` and no body;
//! - a request gets either one `application/json` body, or a
//!   `text/event-stream` whose events carry the server's own requests and
//!   notifications first and then the response. Every event is delivered to
//!   the sink like a stdio line, and the stream is dropped once the response
//!   to the POSTed request has arrived.
//!
//! The session is the transport's business, not the actor's: the
//! `Mcp-Session-Id` of the initialize response, and the protocol version
//! read from its result as it passes through, go on every later request.
//!
//! HTTP has no "the pipe broke" that the actor would notice, so a request
//! whose POST fails — connection refused, a non-2xx status, a body that is
//! not JSON-RPC, a stream that ends before the answer and cannot be
//! resumed — is answered *here*
//! with a JSON-RPC error response for its id. The waiting call fails at once
//! with what happened instead of timing out, and a failed `initialize`
//! fails the server with the same text. Every failure is also reported as
//! [`TransportEvent::Fault`], for the server's status; for notifications
//! and responses, which have no one waiting, that is all.
//!
//! Servers forget sessions (a restart, an idle timeout). A request refused
//! for that reason is not the actor's problem either: the transport opens a
//! new session with the actor's own `initialize`, tells the actor to list
//! its tools again with a made-up `notifications/tools/list_changed`, and
//! retries the request once (the `reinit` module).
//!
//! Messages the server starts on its own (list changes, log messages) come
//! on the GET stream, opened once `notifications/initialized` was accepted
//! and reopened with backoff whenever it ends (the `listen` module).
//!
//! A request's event stream that ends before the answer is resumed with
//! GET and `Last-Event-ID` after the server's `retry` (the `stream`
//! module).
//!
//! A POST the server never answers does not stop other requests (each has
//! its own task and connection) and ends when the actor's timeout cancels
//! its request: `notifications/cancelled` drops the POST (the `abandon`
//! module).
//!
//! `https://` URLs are served over rustls, trusting the system's roots and
//! a server's own `ca_cert` (the `tls` module); a failed handshake is told
//! as what it means, not as rustls' enum.
//!
//! The files: `session.rs` (what a connection's POSTs share, and one
//! exchange), `outbound.rs` (one task per message, the acknowledgement
//! barrier), `body.rs` (reading answers and errors), and the modules named
//! above.
//!
//! A request in the MCP 2026-07-28 envelope (the actor speaks that
//! revision to this server) has no session: no `Mcp-Session-Id`, no GET
//! stream, no DELETE; its headers mirror its version, method, name and
//! marked parameters, and an error status with a JSON-RPC body is its
//! answer (the `modern` module). Its list changes come on the response
//! stream of its `subscriptions/listen`, which is a request like any other
//! here.
//!
//! A server behind OAuth gets a token on every POST, refreshed before it
//! expires and after a 401 (the `auth` module); the flow that gets tokens
//! in the first place — discovery, registration, PKCE, `warden login` — is
//! the `oauth` module, which nothing else of the transport needs.
//!
//! A server that predates Streamable HTTP refuses the `initialize` POST
//! with 400, 404 or 405; Warden then speaks the legacy HTTP+SSE transport
//! with it (the `legacy` module), or does so from the start, or never, as
//! [`HttpSpec::transport`] says.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::{AnswerTaker, Backlog, ConnectFuture, Connection, Connector, EventSink, StderrTail};
use crate::framing::DEFAULT_MAX_MESSAGE_BYTES;
use crate::jsonrpc::ErrorCode;

mod abandon;
mod auth;
mod body;
mod failure;
mod kind;
mod legacy;
mod listen;
mod modern;
mod oauth;
mod outbound;
mod reinit;
mod session;
mod stream;
#[cfg(test)]
mod tests;
mod tls;

// What the submodules share, named once here for all of them.
use body::{answers, content_type, lock, parse_message};
use kind::Kind;
use session::{Answer, Failure, Session};

/// A hyper client that speaks TLS (rustls, the system's roots) to
/// `https://` URLs and plain TCP to `http://` ones: the one this transport
/// uses, for Warden's other HTTP calls (tool summaries) to share.
pub type HttpClient = Client<tls::Connector, Full<Bytes>>;

/// Builds an [`HttpClient`]; `Err` says why TLS could not be set up.
pub fn http_client(https: bool) -> Result<HttpClient, String> {
    Ok(Client::builder(TokioExecutor::new()).build(tls::connector(None, https)?))
}

/// A client for OAuth's endpoints: like [`http_client`], speaking TLS or
/// plain TCP by each URL's scheme, trusting the system's roots plus the
/// server's own `ca_cert` (its authorization server is often behind the
/// same private CA).
pub(crate) fn oauth_connector(ca_cert: Option<&std::path::Path>) -> Result<HttpClient, String> {
    Ok(Client::builder(TokioExecutor::new()).build(tls::connector(ca_cert, true)?))
}

pub(crate) use body::error_chain;
pub use oauth::{AuthFailure, Authorizer, Challenge, LoggedIn, LoginUi, OAuthError};

/// The JSON-RPC error code of the answers this transport makes up for a
/// request whose POST failed: the first of the range JSON-RPC leaves to
/// implementations.
pub const HTTP_TRANSPORT_ERROR: ErrorCode = ErrorCode(-32000);

/// The JSON-RPC error code of the answer Warden makes up for a request
/// its server refused for want of authorization (OAuth: no token, a
/// refresh refused, more scope needed): a login, then the same request
/// again, can succeed. Warden's own; no server sends it.
pub const AUTH_REQUIRED: ErrorCode = ErrorCode(-32031);

/// The JSON-RPC error code of the answer this transport makes up for a
/// 2026-07-28 request whose answer stream broke before the answer came:
/// the request is lost (such streams are not resumed), and whether it ran
/// is unknown. Warden's own; no server sends it.
pub const STREAM_BROKEN: ErrorCode = ErrorCode(-32032);

/// How much of an error body goes into the error message.
pub(super) const BODY_EXCERPT_CHARS: usize = 200;

/// How long closing waits for the server to answer the session's DELETE.
pub(super) const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

pub(super) const SESSION_HEADER: &str = "mcp-session-id";
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";

/// Which HTTP transport to speak with a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpTransport {
    /// Streamable HTTP, falling back to the legacy HTTP+SSE transport when
    /// the server refuses `initialize` with 400, 404 or 405.
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The legacy HTTP+SSE transport (protocol 2024-11-05) only: the URL is
    /// the server's event stream (often `…/sse`).
    Sse,
}

impl HttpTransport {
    /// The names a config uses: `auto`, `streamable-http`, `sse`.
    pub fn parse(name: &str) -> Option<HttpTransport> {
        match name {
            "auto" => Some(HttpTransport::Auto),
            "streamable-http" => Some(HttpTransport::StreamableHttp),
            "sse" => Some(HttpTransport::Sse),
            _ => None,
        }
    }
}

/// How to reach one HTTP server.
#[derive(Clone)]
pub struct HttpSpec {
    /// The server's name in Warden, for logs.
    pub server: String,
    /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// Headers sent with every request (`Authorization`...). Their values
    /// are secrets: never logged, never in `Debug`.
    pub headers: BTreeMap<String, String>,
    /// The largest message (a JSON body, one SSE event) accepted.
    pub max_message_bytes: usize,
    /// How long to wait before reopening the GET stream the first time it
    /// ends or fails; doubled after each failure (with ±20% jitter).
    pub reconnect_initial: Duration,
    /// The most the wait before reopening the GET stream grows to.
    pub reconnect_max: Duration,
    /// How long a request's event stream is resumed, all attempts
    /// together, before its request fails. The actor's call timeout is
    /// usually shorter; this bounds the transport's own work.
    pub resume_limit: Duration,
    /// A PEM file of certificates trusted for this server besides the
    /// system's roots: the CA of a server with a private one.
    pub ca_cert: Option<PathBuf>,
    /// Streamable HTTP, the legacy HTTP+SSE transport, or the first and
    /// then the second.
    pub transport: HttpTransport,
    /// The OAuth tokens of this server: every request carries its access
    /// token, and a 401 refreshes it. `None`: no `Authorization` is added
    /// (a configured `Authorization` header is sent as is).
    pub authorizer: Option<Arc<crate::Authorizer>>,
}

impl HttpSpec {
    /// A spec with no extra headers and the default size limit.
    pub fn new(server: impl Into<String>, url: impl Into<String>) -> Self {
        HttpSpec {
            server: server.into(),
            url: url.into(),
            headers: BTreeMap::new(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            reconnect_initial: Duration::from_secs(1),
            reconnect_max: Duration::from_secs(30),
            resume_limit: Duration::from_secs(300),
            ca_cert: None,
            transport: HttpTransport::Auto,
            authorizer: None,
        }
    }
}

impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSpec")
            .field("server", &self.server)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("max_message_bytes", &self.max_message_bytes)
            .field("reconnect_initial", &self.reconnect_initial)
            .field("reconnect_max", &self.reconnect_max)
            .field("resume_limit", &self.resume_limit)
            .field("ca_cert", &self.ca_cert)
            .field("transport", &self.transport)
            .field("oauth", &self.authorizer.is_some())
            .finish()
    }
}

/// Opens Streamable HTTP sessions with one server.
#[derive(Debug, Clone)]
pub struct HttpConnector {
    spec: Arc<HttpSpec>,
}

impl HttpConnector {
    /// A connector for `spec`.
    pub fn new(spec: HttpSpec) -> Self {
        HttpConnector { spec: Arc::new(spec) }
    }
}

impl Connector for HttpConnector {
    fn connect(&self, sink: EventSink) -> ConnectFuture {
        self.connect_paced(sink, Backlog::unlimited(), None)
    }

    fn connect_paced(
        &self,
        sink: EventSink,
        backlog: Arc<Backlog>,
        taker: Option<Arc<dyn AnswerTaker>>,
    ) -> ConnectFuture {
        let spec = self.spec.clone();
        Box::pin(async move {
            let (session, closer) = session::open(&spec, sink, backlog, taker)?;
            Ok(Connection::new(Box::new(outbound::HttpOutbound::new(session)), closer, StderrTail::default()))
        })
    }

    /// A modern request first, whose refusal says which era the server
    /// is of — except where the config says the server speaks only the
    /// HTTP+SSE transport of 2024-11-05.
    fn probes_era(&self) -> bool {
        self.spec.transport != HttpTransport::Sse
    }

    fn identity(&self) -> Option<String> {
        Some(format!("http {}", self.spec.url))
    }

    fn survives_warden(&self) -> bool {
        true
    }
}
