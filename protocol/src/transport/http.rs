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
//! A server that predates Streamable HTTP refuses the `initialize` POST
//! with 400, 404 or 405; Warden then speaks the legacy HTTP+SSE transport
//! with it (the `legacy` module), or does so from the start, or never, as
//! [`HttpSpec::transport`] says.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use tokio::sync::watch;

use super::{
    excerpt, ConnectFuture, Connection, Connector, EventSink, Outbound, StderrTail, TransportError, TransportEvent,
};
use crate::framing::DEFAULT_MAX_MESSAGE_BYTES;
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RawResponse, RequestId};

mod abandon;
mod legacy;
mod listen;
mod reinit;
mod stream;
#[cfg(test)]
mod tests;
mod tls;

/// A hyper client that speaks TLS (rustls, the system's roots) to
/// `https://` URLs and plain TCP to `http://` ones: the one this transport
/// uses, for Warden's other HTTP calls (tool summaries) to share.
pub type HttpClient = Client<tls::Connector, Full<Bytes>>;

/// Builds an [`HttpClient`]; `Err` says why TLS could not be set up.
pub fn http_client(https: bool) -> Result<HttpClient, String> {
    Ok(Client::builder(TokioExecutor::new()).build(tls::connector(None, https)?))
}

/// The JSON-RPC error code of the answers this transport makes up for a
/// request whose POST failed: the first of the range JSON-RPC leaves to
/// implementations.
pub const HTTP_TRANSPORT_ERROR: ErrorCode = ErrorCode(-32000);

/// How much of an error body goes into the error message.
const BODY_EXCERPT_CHARS: usize = 200;

/// How long closing waits for the server to answer the session's DELETE.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

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
        let spec = self.spec.clone();
        Box::pin(async move { open(&spec, sink) })
    }
}

/// Everything the POST tasks of one connection share.
struct Session {
    url: String,
    uri: Uri,
    server: String,
    max_message_bytes: usize,
    /// The configured headers, checked once at connect.
    headers: HeaderMap,
    client: Client<tls::Connector, Full<Bytes>>,
    sink: EventSink,
    /// `Mcp-Session-Id` from the initialize response.
    session_id: Mutex<Option<HeaderValue>>,
    /// The negotiated protocol version, from the initialize result.
    protocol_version: Mutex<Option<HeaderValue>>,
    /// Done once every notification and response sent so far has been
    /// accepted by the server (see [`HttpOutbound::send_json`]).
    acknowledged: Mutex<watch::Receiver<bool>>,
    /// Set when Warden closes the connection: nothing is delivered after.
    closed: AtomicBool,
    /// Flips to `true` on close, ending every POST still in flight.
    closing: watch::Receiver<bool>,
    /// The actor's `initialize` request, replayed to open a new session.
    initialize: Mutex<Option<Bytes>>,
    /// How many re-initialisations were attempted: a request that saw
    /// this change while it was out retries instead of re-initialising.
    epoch: AtomicU64,
    /// Held while re-initialising; holds how the last attempt went, for
    /// the requests that waited for it.
    renewal: tokio::sync::Mutex<Result<(), String>>,
    /// Set once the GET stream's task is started.
    listening: AtomicBool,
    /// See [`HttpSpec::reconnect_initial`] and [`HttpSpec::reconnect_max`].
    reconnect_initial: Duration,
    reconnect_max: Duration,
    /// See [`HttpSpec::resume_limit`].
    resume_limit: Duration,
    /// The requests whose POSTs are running, to drop one when the actor
    /// cancels it.
    in_flight: abandon::InFlight,
    /// See [`HttpSpec::transport`].
    transport: HttpTransport,
    /// The legacy transport's message endpoint, once its stream is open:
    /// from then on every message goes there.
    legacy: OnceLock<Uri>,
}

fn open(spec: &HttpSpec, sink: EventSink) -> Result<Connection, TransportError> {
    let unusable = |problem: String| TransportError::Url { url: spec.url.clone(), problem };
    let uri: Uri = spec.url.parse().map_err(|error| unusable(format!("not a valid URL: {error}")))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(unusable("the URL must start with `http://` or `https://`".into())),
    };
    let connector = tls::connector(spec.ca_cert.as_deref(), https).map_err(unusable)?;
    let mut headers = HeaderMap::new();
    for (name, value) in &spec.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| unusable(format!("`{name}` is not a valid header name")))?;
        // The value is a secret: say which header, never what it holds.
        let value = HeaderValue::from_str(value)
            .map_err(|_| unusable(format!("the value of header `{name}` is not a valid header value")))?;
        headers.insert(header, value);
    }
    let (close_tx, closing) = watch::channel(false);
    let (_, nothing_pending) = watch::channel(true);
    let session = Arc::new(Session {
        url: spec.url.clone(),
        uri,
        server: spec.server.clone(),
        max_message_bytes: spec.max_message_bytes,
        headers,
        client: Client::builder(TokioExecutor::new()).build(connector),
        sink,
        session_id: Mutex::new(None),
        protocol_version: Mutex::new(None),
        acknowledged: Mutex::new(nothing_pending),
        closed: AtomicBool::new(false),
        closing,
        initialize: Mutex::new(None),
        epoch: AtomicU64::new(0),
        renewal: tokio::sync::Mutex::new(Ok(())),
        listening: AtomicBool::new(false),
        reconnect_initial: spec.reconnect_initial,
        reconnect_max: spec.reconnect_max,
        resume_limit: spec.resume_limit,
        in_flight: abandon::InFlight::default(),
        transport: spec.transport,
        legacy: OnceLock::new(),
    });
    let closer_session = session.clone();
    let closer = Box::pin(async move {
        let _ = close_tx.send(true);
        closer_session.end_session().await;
        // A legacy connection whose stream ended has said `Closed` already.
        if !closer_session.closed.swap(true, Ordering::SeqCst) {
            (closer_session.sink)(TransportEvent::Closed { reason: "closed by Warden".into() });
        }
    });
    Ok(Connection::new(Box::new(HttpOutbound { session }), closer, StderrTail::default()))
}

/// Starts one POST task per message.
struct HttpOutbound {
    session: Arc<Session>,
}

impl Outbound for HttpOutbound {
    fn send(&self, message: Message) -> Result<(), TransportError> {
        self.send_json(message.to_json().into_bytes())
    }

    /// Each message is POSTed on its own task, but not quite in any order:
    /// a message waits until the server has accepted every notification and
    /// response sent before it. Otherwise `tools/list` could overtake
    /// `notifications/initialized`, and a server that registers tools when
    /// initialised (server-everything does) would list too few. Requests do
    /// not wait for one another, so calls still run side by side.
    fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError> {
        // `closed` without `closing`: a legacy connection's stream ended.
        if *self.session.closing.borrow() || self.session.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        let kind = Kind::of(&json);
        let json = Bytes::from(json);
        if let Kind::Request { initialize: true, .. } = kind {
            *lock(&self.session.initialize) = Some(json.clone());
        }
        let abandoned = match &kind {
            Kind::Request { id, .. } => Some(self.session.in_flight.start(id)),
            // The actor gave up on a request: its POST goes now, not when
            // the server gets round to answering it.
            Kind::Other { .. } => {
                self.session.in_flight.cancel_from(&json);
                None
            }
        };
        let (earlier, accepted) = {
            let mut acknowledged = lock(&self.session.acknowledged);
            let earlier = acknowledged.clone();
            match kind {
                Kind::Request { .. } => (earlier, None),
                Kind::Other { .. } => {
                    let (accepted, pending) = watch::channel(false);
                    *acknowledged = pending;
                    (earlier, Some(accepted))
                }
            }
        };
        let session = self.session.clone();
        let mut closing = self.session.closing.clone();
        tokio::spawn(async move {
            let exchange = async {
                let mut earlier = earlier;
                // A sender dropped without saying `true` ended its POST too.
                let _ = earlier.wait_for(|done| *done).await;
                session.post(json, &kind).await;
                if let (Kind::Other { initialized: true }, None) = (&kind, session.legacy.get()) {
                    // The session is set up: the server may talk now (a
                    // legacy server talks on the stream it already has).
                    session.start_listening();
                }
            };
            let abandoned = async {
                match abandoned {
                    Some(abandoned) => drop(abandoned.await),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = exchange => {}
                // Closing ends what is in flight; the actor fails its calls
                // when it sees `Closed`.
                _ = closing.wait_for(|closing| *closing) => {}
                // The actor cancelled the request: nobody waits for it.
                _ = abandoned => {}
            }
            if let Kind::Request { id, .. } = &kind {
                session.in_flight.finished(id);
            }
            // Dropping `accepted` (here or when the task is cancelled) lets
            // the messages queued behind this one go.
            drop(accepted);
        });
        Ok(())
    }
}

/// What was POSTed, as far as the transport cares.
#[derive(Debug)]
enum Kind {
    /// A request: someone waits for the answer with this id.
    Request { id: RequestId, initialize: bool },
    /// A notification or a response: expects 202. `initialized` marks
    /// `notifications/initialized`, after which the GET stream is opened.
    Other { initialized: bool },
}

impl Kind {
    fn of(json: &[u8]) -> Kind {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            id: Option<RequestId>,
            #[serde(borrow)]
            method: Option<&'a str>,
        }
        match serde_json::from_slice::<Envelope<'_>>(json) {
            Ok(Envelope { id: Some(id), method: Some(method) }) => {
                Kind::Request { id, initialize: method == "initialize" }
            }
            Ok(Envelope { id: None, method }) => {
                Kind::Other { initialized: method == Some("notifications/initialized") }
            }
            _ => Kind::Other { initialized: false },
        }
    }
}

/// Why a POST did not produce an answer.
enum Failure {
    /// Anything but an expired session: the message says it all.
    Plain(String),
    /// An error status that is not about the session.
    Status { status: StatusCode, message: String },
    /// The server no longer knows the session id we sent.
    SessionExpired { status: StatusCode, body: String },
}

impl Failure {
    /// The failure in words, for the error answering the request.
    fn message(self, url: &str) -> String {
        match self {
            Failure::Plain(message) | Failure::Status { message, .. } => message,
            Failure::SessionExpired { status, body } => {
                format!("the server forgot our session (HTTP {}) at {url}: {body}", status.as_u16())
            }
        }
    }
}

/// Where the answer to a POSTed request goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// To the sink, like every other event: the actor asked.
    Deliver,
    /// Back to the caller of [`Session::exchange`]: the transport asked.
    Keep,
}

impl Session {
    /// Sends one message; a request refused because the server forgot the
    /// session is retried once on a new session. What failed in the end is
    /// answered as an error for the request's id.
    async fn post(self: &Arc<Self>, json: Bytes, kind: &Kind) {
        let outcome = if self.uses_legacy(kind) {
            self.post_legacy(json, kind).await
        } else {
            self.post_streamable(json, kind).await
        };
        let Err(message) = outcome else { return };
        self.deliver(TransportEvent::Fault { problem: message.clone() });
        if let Kind::Request { id, .. } = kind {
            self.deliver(TransportEvent::Message(Message::error(
                id.clone(),
                ErrorObject::new(HTTP_TRANSPORT_ERROR, message),
            )));
        }
    }

    /// [`Session::post`] over Streamable HTTP; falls back to the legacy
    /// transport when `initialize` says this is an old server.
    async fn post_streamable(self: &Arc<Self>, json: Bytes, kind: &Kind) -> Result<(), String> {
        // Read before the POST: a re-initialisation counted after this
        // may have come too late for the session id this POST carries.
        let epoch = self.epoch.load(Ordering::SeqCst);
        let failure = match self.exchange(json.clone(), kind, Answer::Deliver).await {
            Ok(_) => return Ok(()),
            Err(failure) => failure,
        };
        if self.falls_back(&failure, kind) {
            return self.fall_back(json, kind, failure.message(&self.url)).await;
        }
        let message = match (failure, kind) {
            (Failure::SessionExpired { status, body }, Kind::Request { .. }) => {
                match self.renew_session(epoch, status, &body).await {
                    Ok(()) => match self.exchange(json, kind, Answer::Deliver).await {
                        Ok(_) => return Ok(()),
                        Err(Failure::SessionExpired { status, body }) => format!(
                            "the server forgot the session Warden had just re-opened (HTTP {}) at {}: {body}",
                            status.as_u16(),
                            self.url
                        ),
                        Err(failure) => failure.message(&self.url),
                    },
                    Err(message) => message,
                }
            }
            (failure, _) => failure.message(&self.url),
        };
        Err(message)
    }

    /// Sends one message and delivers what the server answered; the answer
    /// to a request is returned instead when `answer` says to keep it.
    async fn exchange(&self, json: Bytes, kind: &Kind, answer: Answer) -> Result<Option<TransportEvent>, Failure> {
        let initialize = matches!(kind, Kind::Request { initialize: true, .. });
        let mut request = hyper::Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(json))
            .expect("a request from a checked URI and constant headers");
        // `initialize` opens a session: it carries neither an old session
        // id nor a version.
        let sent_session = self.add_session_headers(request.headers_mut(), !initialize);
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| Failure::Plain(format!("could not reach {}: {}", self.url, error_chain(&error))))?;
        let status = response.status();
        if !status.is_success() {
            let body = self.error_body(response.into_body()).await;
            let forgotten = status == StatusCode::NOT_FOUND
                || (status == StatusCode::BAD_REQUEST && body.to_ascii_lowercase().contains("session"));
            if sent_session && forgotten {
                return Err(Failure::SessionExpired { status, body });
            }
            return Err(Failure::Status {
                status,
                message: format!("HTTP {} from {}: {body}", status.as_u16(), self.url),
            });
        }
        let Kind::Request { id, .. } = kind else {
            // 202 and no body is the rule; anything else is drained unread.
            let _ = response.into_body().collect().await;
            return Ok(None);
        };
        if initialize {
            // A new session replaces the old one; a server without
            // sessions sends none.
            *lock(&self.session_id) = response.headers().get(SESSION_HEADER).cloned();
        }
        match content_type(response.headers()).as_str() {
            "application/json" => self.read_json(response.into_body(), id, initialize, answer).await,
            "text/event-stream" => self.read_stream(response.into_body(), id, initialize, answer).await,
            other => Err(Failure::Plain(format!(
                "HTTP {} from {} with content type `{other}` answered a request; expected application/json or text/event-stream",
                status.as_u16(),
                self.url
            ))),
        }
    }

    /// A GET of the server's URL asking for an event stream, with the
    /// configured headers (and the session's, when `in_session`).
    fn event_stream_request(&self, in_session: bool) -> hyper::Request<Full<Bytes>> {
        let mut request = hyper::Request::builder()
            .method(Method::GET)
            .uri(self.uri.clone())
            .header(ACCEPT, "text/event-stream")
            .body(Full::new(Bytes::new()))
            .expect("a request from a checked URI and constant headers");
        self.add_session_headers(request.headers_mut(), in_session);
        request
    }

    /// Adds the configured headers and, unless this opens a session,
    /// `Mcp-Session-Id` and `MCP-Protocol-Version`; says whether a session
    /// id went along.
    fn add_session_headers(&self, headers: &mut HeaderMap, in_session: bool) -> bool {
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        if !in_session {
            return false;
        }
        if let Some(version) = lock(&self.protocol_version).clone() {
            headers.insert(HeaderName::from_static(VERSION_HEADER), version);
        }
        match lock(&self.session_id).clone() {
            Some(session_id) => {
                headers.insert(HeaderName::from_static(SESSION_HEADER), session_id);
                true
            }
            None => false,
        }
    }

    async fn read_json(
        &self,
        body: hyper::body::Incoming,
        id: &RequestId,
        initialize: bool,
        answer: Answer,
    ) -> Result<Option<TransportEvent>, Failure> {
        let bytes = Limited::new(body, self.max_message_bytes).collect().await.map_err(|error| {
            Failure::Plain(format!("reading the answer from {} failed: {}", self.url, error_chain(&*error)))
        })?;
        let bytes = bytes.to_bytes();
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Failure::Plain(format!("the answer from {} is not UTF-8", self.url)))?;
        let event = parse_message(text).map_err(|problem| {
            Failure::Plain(format!("the answer from {} is not a JSON-RPC message: {problem}", self.url))
        })?;
        if initialize {
            self.note_protocol_version(&event, id);
        }
        if answer == Answer::Keep {
            return Ok(Some(event));
        }
        self.deliver(event);
        Ok(None)
    }

    /// Remembers the protocol version the initialize result names.
    fn note_protocol_version(&self, event: &TransportEvent, id: &RequestId) {
        #[derive(Deserialize)]
        struct Negotiated {
            #[serde(rename = "protocolVersion")]
            protocol_version: String,
        }
        let negotiated = match event {
            TransportEvent::Response(RawResponse { id: answered, result }) if answered == id => {
                serde_json::from_str::<Negotiated>(result.get()).ok()
            }
            _ => None,
        };
        if let Some(version) = negotiated.and_then(|n| HeaderValue::from_str(&n.protocol_version).ok()) {
            *lock(&self.protocol_version) = Some(version);
        }
    }

    /// At most [`BODY_EXCERPT_CHARS`] of an error body, as text. Only the
    /// start is read: a proxy's error page can be large.
    async fn error_body(&self, mut body: hyper::body::Incoming) -> String {
        // Enough bytes for the excerpt even in four-byte characters.
        const ENOUGH: usize = 4 * BODY_EXCERPT_CHARS + 4;
        let mut bytes = Vec::new();
        while bytes.len() < ENOUGH {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(chunk) = frame.into_data() {
                        bytes.extend_from_slice(&chunk);
                    }
                }
                Some(Err(_)) if bytes.is_empty() => return "(the body could not be read)".into(),
                Some(Err(_)) | None => break,
            }
        }
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(ENOUGH)]).trim().to_string();
        if text.is_empty() {
            "(no body)".into()
        } else {
            excerpt(&text, BODY_EXCERPT_CHARS)
        }
    }

    /// Ends the session on the server: DELETE with its id. A server that
    /// does not allow it (405), or does not answer, is fine.
    async fn end_session(&self) {
        if lock(&self.session_id).is_none() {
            return;
        }
        let mut request = hyper::Request::builder()
            .method(Method::DELETE)
            .uri(self.uri.clone())
            .body(Full::new(Bytes::new()))
            .expect("a request from a checked URI");
        // Adds the session id taken above: nothing clears it.
        self.add_session_headers(request.headers_mut(), true);
        match tokio::time::timeout(DELETE_TIMEOUT, self.client.request(request)).await {
            Ok(Ok(response)) => {
                tracing::debug!(server = %self.server, status = %response.status(), "ended the HTTP session");
                let _ = response.into_body().collect().await;
            }
            Ok(Err(error)) => {
                tracing::debug!(server = %self.server, "ending the HTTP session failed: {}", error_chain(&error))
            }
            Err(_) => tracing::debug!(server = %self.server, "the server did not answer the session's DELETE"),
        }
    }

    fn deliver(&self, event: TransportEvent) {
        if !self.closed.load(Ordering::SeqCst) {
            (self.sink)(event);
        }
    }
}

/// Reads one message as a transport event, successful responses raw.
fn parse_message(text: &str) -> Result<TransportEvent, String> {
    if let Some(response) = RawResponse::parse(text) {
        return Ok(TransportEvent::Response(response));
    }
    match Message::parse(text) {
        Ok(message) => Ok(TransportEvent::Message(message)),
        Err(error) => Err(format!("{error} (it starts: `{}`)", excerpt(text, 80))),
    }
}

/// The media type of a response, lowercase, without parameters.
fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether `event` is the response to request `id`.
fn answers(event: &TransportEvent, id: &RequestId) -> bool {
    match event {
        TransportEvent::Response(response) => &response.id == id,
        TransportEvent::Message(Message::Response(response)) => response.id.as_ref() == Some(id),
        _ => false,
    }
}

/// An error and its causes, `: `-separated: hyper's own text alone
/// ("client error (Connect)") does not say what went wrong.
/// A failed TLS handshake is told as what it means instead.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    if let Some(tls) = tls::explain(error) {
        return tls;
    }
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
