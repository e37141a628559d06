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
//! not JSON-RPC, a stream that ends before the answer — is answered *here*
//! with a JSON-RPC error response for its id. The waiting call fails at once
//! with what happened instead of timing out, and a failed `initialize`
//! fails the server with the same text. Failures of notifications and
//! responses have no one waiting; they are reported as
//! [`TransportEvent::Malformed`] so the actor logs them.
//!
//! Not built yet: `https://` (TLS), re-initialising after the server forgot
//! the session (reported as an error instead), resuming a broken SSE stream
//! with `Last-Event-ID`, the GET stream for server-initiated messages, and
//! the legacy HTTP+SSE transport.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use tokio::sync::watch;

use super::{
    excerpt, ConnectFuture, Connection, Connector, EventSink, Outbound, StderrTail, TransportError, TransportEvent,
};
use crate::framing::DEFAULT_MAX_MESSAGE_BYTES;
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RawResponse, RequestId};
use crate::sse::{SseItem, SseParser};

#[cfg(test)]
mod tests;

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

/// How to reach one Streamable HTTP server.
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
}

impl HttpSpec {
    /// A spec with no extra headers and the default size limit.
    pub fn new(server: impl Into<String>, url: impl Into<String>) -> Self {
        HttpSpec {
            server: server.into(),
            url: url.into(),
            headers: BTreeMap::new(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
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
    client: Client<TcpConnector, Full<Bytes>>,
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
}

fn open(spec: &HttpSpec, sink: EventSink) -> Result<Connection, TransportError> {
    let unusable = |problem: String| TransportError::Url { url: spec.url.clone(), problem };
    let uri: Uri = spec.url.parse().map_err(|error| unusable(format!("not a valid URL: {error}")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(unusable(
                "`https://` needs TLS, which Warden's HTTP transport does not support yet; use an `http://` URL (a local server or a tunnel)".into(),
            ))
        }
        _ => return Err(unusable("the URL must start with `http://`".into())),
    }
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
        client: Client::builder(TokioExecutor::new()).build_http(),
        sink,
        session_id: Mutex::new(None),
        protocol_version: Mutex::new(None),
        acknowledged: Mutex::new(nothing_pending),
        closed: AtomicBool::new(false),
        closing,
    });
    let closer_session = session.clone();
    let closer = Box::pin(async move {
        let _ = close_tx.send(true);
        closer_session.end_session().await;
        closer_session.closed.store(true, Ordering::SeqCst);
        (closer_session.sink)(TransportEvent::Closed { reason: "closed by Warden".into() });
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
        if *self.session.closing.borrow() {
            return Err(TransportError::Closed);
        }
        let kind = Kind::of(&json);
        let (earlier, accepted) = {
            let mut acknowledged = lock(&self.session.acknowledged);
            let earlier = acknowledged.clone();
            match kind {
                Kind::Request { .. } => (earlier, None),
                Kind::Other => {
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
            };
            tokio::select! {
                _ = exchange => {}
                // Closing ends what is in flight; the actor fails its calls
                // when it sees `Closed`.
                _ = closing.wait_for(|closing| *closing) => {}
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
    /// A notification or a response: expects 202.
    Other,
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
            _ => Kind::Other,
        }
    }
}

/// Why a POST did not produce an answer.
enum Failure {
    /// Anything but an expired session: the message says it all.
    Plain(String),
    /// The server no longer knows the session id we sent.
    SessionExpired { status: StatusCode, body: String },
}

impl Session {
    async fn post(&self, json: Vec<u8>, kind: &Kind) {
        let outcome = self.exchange(json, kind).await;
        let Err(failure) = outcome else { return };
        let message = match failure {
            Failure::Plain(message) => message,
            Failure::SessionExpired { status, body } => format!(
                "the server forgot our session (HTTP {}) at {}: {body}; re-initialising is not built yet, so restart Warden to open a new session",
                status.as_u16(),
                self.url,
            ),
        };
        match kind {
            Kind::Request { id, .. } => {
                self.deliver(TransportEvent::Message(Message::error(
                    id.clone(),
                    ErrorObject::new(HTTP_TRANSPORT_ERROR, message),
                )));
            }
            Kind::Other => self.deliver(TransportEvent::Malformed { problem: message }),
        }
    }

    /// Sends one message and delivers what the server answered.
    async fn exchange(&self, json: Vec<u8>, kind: &Kind) -> Result<(), Failure> {
        let initialize = matches!(kind, Kind::Request { initialize: true, .. });
        let mut request = hyper::Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(json)))
            .expect("a request from a checked URI and constant headers");
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
            return Err(Failure::Plain(format!("HTTP {} from {}: {body}", status.as_u16(), self.url)));
        }
        let Kind::Request { id, .. } = kind else {
            // 202 and no body is the rule; anything else is drained unread.
            let _ = response.into_body().collect().await;
            return Ok(());
        };
        if initialize {
            if let Some(session_id) = response.headers().get(SESSION_HEADER) {
                *lock(&self.session_id) = Some(session_id.clone());
            }
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .unwrap_or_default();
        match content_type.as_str() {
            "application/json" => self.read_json(response.into_body(), id, initialize).await,
            "text/event-stream" => self.read_stream(response.into_body(), id, initialize).await,
            other => Err(Failure::Plain(format!(
                "HTTP {} from {} with content type `{other}` answered a request; expected application/json or text/event-stream",
                status.as_u16(),
                self.url
            ))),
        }
    }

    /// Adds `Mcp-Session-Id` and (after initialize) `MCP-Protocol-Version`
    /// and the configured headers; says whether a session id went along.
    fn add_session_headers(&self, headers: &mut HeaderMap, with_version: bool) -> bool {
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        if with_version {
            if let Some(version) = lock(&self.protocol_version).clone() {
                headers.insert(HeaderName::from_static(VERSION_HEADER), version);
            }
        }
        match lock(&self.session_id).clone() {
            Some(session_id) => {
                headers.insert(HeaderName::from_static(SESSION_HEADER), session_id);
                true
            }
            None => false,
        }
    }

    async fn read_json(&self, body: hyper::body::Incoming, id: &RequestId, initialize: bool) -> Result<(), Failure> {
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
        self.deliver(event);
        Ok(())
    }

    /// Delivers the stream's events until the answer to `id` has come.
    async fn read_stream(
        &self,
        mut body: hyper::body::Incoming,
        id: &RequestId,
        initialize: bool,
    ) -> Result<(), Failure> {
        let mut parser = SseParser::with_max_event_bytes(self.max_message_bytes);
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| {
                Failure::Plain(format!(
                    "the event stream from {} broke before the answer came: {}",
                    self.url,
                    error_chain(&error)
                ))
            })?;
            let Ok(chunk) = frame.into_data() else { continue };
            let mut answered = false;
            let mut events = Vec::new();
            for item in parser.feed(&chunk) {
                let event = match item {
                    // A priming event (an id, empty data) carries no message.
                    SseItem::Event(event) if event.data.is_empty() => continue,
                    SseItem::Event(event) => match parse_message(&event.data) {
                        Ok(message) => message,
                        Err(problem) => TransportEvent::Malformed {
                            problem: format!("an event from {} is not a JSON-RPC message: {problem}", self.url),
                        },
                    },
                    SseItem::Oversized { bytes } => TransportEvent::Malformed {
                        problem: format!("a {bytes}-byte event from {} is over the message size limit", self.url),
                    },
                };
                if answers(&event, id) {
                    if initialize {
                        self.note_protocol_version(&event, id);
                    }
                    answered = true;
                }
                events.push(event);
            }
            match events.len() {
                0 => {}
                1 => self.deliver(events.pop().expect("one event")),
                _ => self.deliver(TransportEvent::Batch(events)),
            }
            if answered {
                return Ok(());
            }
        }
        Err(Failure::Plain(format!("the event stream from {} ended before the answer came", self.url)))
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
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
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
