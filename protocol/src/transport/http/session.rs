//! One Streamable HTTP session: what every POST task of a connection
//! shares (the session id, the negotiated version, the acknowledgement
//! barrier, the re-initialisation lock), opening it, one POST's exchange
//! with the server, and reading what it answers; `Kind` says what a POST
//! carries.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Method, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use tokio::sync::watch;

use super::body::{content_type, error_chain, lock, parse_message};
pub(super) use super::failure::{Failure, Refusal};
use super::kind::Kind;
use super::{
    abandon, tls, HttpSpec, AUTH_REQUIRED, BODY_EXCERPT_CHARS, DELETE_TIMEOUT, HTTP_TRANSPORT_ERROR, SESSION_HEADER,
    VERSION_HEADER,
};
use crate::jsonrpc::{ErrorObject, Message, RawResponse, RequestId};
use crate::transport::{excerpt, taken_id, AnswerTaker, Backlog, Closer, EventSink, TransportError, TransportEvent};

/// Everything the POST tasks of one connection share.
pub(super) struct Session {
    /// What the connector was given: url, server name, limits, reconnect
    /// and resume timing, transport choice.
    pub(super) spec: Arc<HttpSpec>,
    pub(super) uri: Uri,
    /// The configured headers, checked once at connect.
    pub(super) headers: HeaderMap,
    pub(super) client: Client<tls::Connector, Full<Bytes>>,
    pub(super) sink: EventSink,
    /// Takes the answers to POSTed requests before they become events.
    pub(super) taker: Option<Arc<dyn AnswerTaker>>,
    /// What the sink has not handled yet: streams are read no further
    /// while it is full.
    pub(super) backlog: Arc<Backlog>,
    /// `Mcp-Session-Id` from the initialize response.
    pub(super) session_id: Mutex<Option<HeaderValue>>,
    /// The negotiated protocol version, from the initialize result.
    pub(super) protocol_version: Mutex<Option<HeaderValue>>,
    /// Done once every notification and response sent so far has been
    /// accepted by the server (see [`HttpOutbound::send_json`]).
    pub(super) acknowledged: Mutex<watch::Receiver<bool>>,
    /// Set when Warden closes the connection: nothing is delivered after.
    pub(super) closed: AtomicBool,
    /// Flips to `true` on close, ending every POST still in flight.
    pub(super) closing: watch::Receiver<bool>,
    /// The actor's `initialize` request, replayed to open a new session.
    pub(super) initialize: Mutex<Option<Bytes>>,
    /// How many re-initialisations were attempted: a request that saw
    /// this change while it was out retries instead of re-initialising.
    pub(super) epoch: AtomicU64,
    /// Held while re-initialising; holds how the last attempt went, for
    /// the requests that waited for it.
    pub(super) renewal: tokio::sync::Mutex<Result<(), String>>,
    /// Set once the GET stream's task is started.
    pub(super) listening: AtomicBool,
    /// Becomes true once the GET stream's first opening got its answer (a
    /// stream, a 405, a failure): discovery waits for it.
    pub(super) listen_opened: watch::Sender<bool>,
    /// The requests whose POSTs are running, to drop one when the actor
    /// cancels it.
    pub(super) in_flight: abandon::InFlight,
    /// The legacy transport's message endpoint, once its stream is open:
    /// from then on every message goes there.
    pub(super) legacy: OnceLock<Uri>,
    /// The `Authorization` the last POST carried (OAuth), for the GET
    /// streams and the DELETE.
    pub(super) authorization: Mutex<Option<HeaderValue>>,
    /// The `x-mcp-header` parameters of the server's tools (2026-07-28).
    pub(super) header_params: Mutex<super::modern::HeaderParams>,
    /// Set once a 2026-07-28 request went out: the connection has no
    /// session and sends no notifications.
    pub(super) modern: AtomicBool,
}

pub(super) fn open(
    spec: &Arc<HttpSpec>,
    sink: EventSink,
    backlog: Arc<Backlog>,
    taker: Option<Arc<dyn AnswerTaker>>,
) -> Result<(Arc<Session>, Closer), TransportError> {
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
        spec: Arc::clone(spec),
        uri,
        headers,
        client: Client::builder(TokioExecutor::new()).build(connector),
        sink,
        taker,
        backlog,
        session_id: Mutex::new(None),
        protocol_version: Mutex::new(None),
        acknowledged: Mutex::new(nothing_pending),
        closed: AtomicBool::new(false),
        closing,
        initialize: Mutex::new(None),
        epoch: AtomicU64::new(0),
        renewal: tokio::sync::Mutex::new(Ok(())),
        listening: AtomicBool::new(false),
        listen_opened: watch::Sender::new(false),
        in_flight: abandon::InFlight::default(),
        legacy: OnceLock::new(),
        authorization: Mutex::new(None),
        header_params: Mutex::default(),
        modern: AtomicBool::new(false),
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
    Ok((session, closer))
}

/// Where the answer to a POSTed request goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// To the sink, like every other event: the actor asked.
    Deliver,
    /// Back to the caller of [`Session::exchange`]: the transport asked.
    Keep,
}

impl Session {
    /// Sends one message; a request refused because the server forgot the
    /// session is retried once on a new session. What failed in the end is
    /// answered as an error for the request's id.
    pub(super) async fn post(self: &Arc<Self>, json: Bytes, kind: &Kind) {
        let outcome = if self.uses_legacy(kind) {
            self.post_legacy(json, kind).await.map_err(Refusal::Transport)
        } else {
            self.post_streamable(json, kind).await
        };
        let Err(refusal) = outcome else { return };
        let answer = |code, message| {
            if let Kind::Request { id, .. } = kind {
                self.deliver(TransportEvent::Message(Message::error(id.clone(), ErrorObject::new(code, message))));
            }
        };
        match refusal {
            Refusal::Broken(message) => {
                self.deliver(TransportEvent::Fault { problem: message.clone() });
                answer(super::STREAM_BROKEN, message);
            }
            Refusal::Transport(message) => {
                if !kind.is_probe() {
                    self.deliver(TransportEvent::Fault { problem: message.clone() });
                }
                answer(HTTP_TRANSPORT_ERROR, message);
            }
            Refusal::Auth(failure) => {
                // The answer first: its caller reads why; the owner then
                // fails the others' calls and waits for a login.
                answer(AUTH_REQUIRED, failure.advice(&self.spec.server));
                self.deliver(TransportEvent::AuthRequired { failure });
            }
        }
    }

    /// [`Session::post`] over Streamable HTTP; falls back to the legacy
    /// transport when `initialize` says this is an old server.
    async fn post_streamable(self: &Arc<Self>, json: Bytes, kind: &Kind) -> Result<(), Refusal> {
        // Read before the POST: a re-initialisation counted after this
        // may have come too late for the session id this POST carries.
        let epoch = self.epoch.load(Ordering::SeqCst);
        let mut failure = match self.exchange(json.clone(), kind, Answer::Deliver).await {
            Ok(_) => return Ok(()),
            Err(failure) => failure,
        };
        if failure.is_auth() {
            self.recover(failure).await?;
            failure = match self.exchange(json.clone(), kind, Answer::Deliver).await {
                Ok(_) => return Ok(()),
                Err(failure) if failure.is_auth() => return Err(self.refused_again(failure)),
                Err(failure) => failure,
            };
        }
        if self.falls_back(&failure, kind) {
            return self.fall_back(json, kind, failure.message(&self.spec.url)).await.map_err(Refusal::Transport);
        }
        let message = match (failure, kind) {
            (Failure::SessionExpired { status, body }, Kind::Request { .. }) => {
                match self.renew_session(epoch, status, &body).await {
                    Ok(()) => match self.exchange(json, kind, Answer::Deliver).await {
                        Ok(_) => return Ok(()),
                        Err(Failure::SessionExpired { status, body }) => format!(
                            "the server forgot the session Warden had just re-opened (HTTP {}) at {}: {body}",
                            status.as_u16(),
                            self.spec.url
                        ),
                        Err(failure) => failure.message(&self.spec.url),
                    },
                    Err(message) => message,
                }
            }
            (Failure::Broken(message), _) => return Err(Refusal::Broken(message)),
            (failure, _) => failure.message(&self.spec.url),
        };
        Err(Refusal::Transport(message))
    }

    /// Sends one message and delivers what the server answered; the answer
    /// to a request is returned instead when `answer` says to keep it.
    pub(super) async fn exchange(
        &self,
        json: Bytes,
        kind: &Kind,
        answer: Answer,
    ) -> Result<Option<TransportEvent>, Failure> {
        let initialize = matches!(kind, Kind::Request { initialize: true, .. });
        let authorization = self.authorize().await?;
        let body = json.clone();
        let mut request = hyper::Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(json))
            .expect("a request from a checked URI and constant headers");
        // `initialize` opens a session: it carries neither an old session
        // id nor a version. A 2026-07-28 request has no session at all.
        let modern = match kind {
            Kind::Request { modern: Some(modern), .. } => Some(&**modern),
            _ => None,
        };
        let sent_session = self.add_session_headers(request.headers_mut(), !initialize && modern.is_none());
        if let Some(modern) = modern {
            self.add_modern_headers(request.headers_mut(), modern, &body);
        }
        if let Kind::Request { traceparent: Some(traceparent), .. } = kind {
            request.headers_mut().insert("traceparent", traceparent.clone());
        }
        let response =
            self.client.request(request).await.map_err(|error| {
                Failure::Plain(format!("could not reach {}: {}", self.spec.url, error_chain(&error)))
            })?;
        let status = response.status();
        if let Some(failure) = self.auth_failure(status, response.headers(), authorization) {
            let _ = self.error_body(response.into_body()).await;
            return Err(failure);
        }
        if !status.is_success() {
            let body = self.error_body(response.into_body()).await;
            if let (Some(_), Kind::Request { id, .. }) = (modern, kind) {
                if let Some(refusal) = self.refusal_answer(&body, id) {
                    return Ok(self.hand_over(refusal, answer));
                }
            }
            let forgotten = status == StatusCode::NOT_FOUND
                || (status == StatusCode::BAD_REQUEST && body.to_ascii_lowercase().contains("session"));
            if sent_session && forgotten {
                return Err(Failure::SessionExpired { status, body });
            }
            return Err(Failure::Status {
                status,
                message: format!("HTTP {} from {}: {body}", status.as_u16(), self.spec.url),
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
        // A modern `tools/list` answer is vetted before it is delivered.
        let vetted = modern.is_some_and(|modern| modern.lists_tools) && answer == Answer::Deliver;
        let read = if vetted { Answer::Keep } else { answer };
        let kept = match content_type(response.headers()).as_str() {
            "application/json" => self.read_json(response.into_body(), id, initialize, read).await,
            "text/event-stream" => self.read_stream(response.into_body(), id, initialize, read).await,
            other => Err(Failure::Plain(format!(
                "HTTP {} from {} with content type `{other}` answered a request; expected application/json or text/event-stream",
                status.as_u16(),
                self.spec.url
            ))),
        }?;
        match kept {
            Some(event) if vetted => Ok(self.hand_over(self.vet_tools(event), answer)),
            kept => Ok(kept),
        }
    }

    /// An answer made or reshaped here: delivered, or returned when
    /// `answer` says to keep it.
    fn hand_over(&self, event: TransportEvent, answer: Answer) -> Option<TransportEvent> {
        if answer == Answer::Keep {
            return Some(event);
        }
        self.deliver(event);
        None
    }

    /// A GET of the server's URL asking for an event stream, with the
    /// configured headers (and the session's, when `in_session`).
    pub(super) fn event_stream_request(&self, in_session: bool) -> hyper::Request<Full<Bytes>> {
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
    pub(super) fn add_session_headers(&self, headers: &mut HeaderMap, in_session: bool) -> bool {
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        if let Some(authorization) = lock(&self.authorization).clone() {
            headers.insert(hyper::header::AUTHORIZATION, authorization);
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

    /// Ends the session on the server: DELETE with its id. A server that
    /// does not allow it (405), or does not answer, is fine.
    pub(super) async fn end_session(&self) {
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
                tracing::debug!(server = %self.spec.server, status = %response.status(), "ended the HTTP session");
                let _ = response.into_body().collect().await;
            }
            Ok(Err(error)) => {
                tracing::debug!(server = %self.spec.server, "ending the HTTP session failed: {}", error_chain(&error))
            }
            Err(_) => tracing::debug!(server = %self.spec.server, "the server did not answer the session's DELETE"),
        }
    }

    /// A streamed body's next frame, once the sink has room for what it
    /// may carry.
    pub(super) async fn paced_frame(
        &self,
        body: &mut hyper::body::Incoming,
    ) -> Option<Result<hyper::body::Frame<Bytes>, hyper::Error>> {
        self.backlog.room().await;
        body.frame().await
    }

    pub(super) fn deliver(&self, event: TransportEvent) {
        if !self.closed.load(Ordering::SeqCst) {
            (self.sink)(event);
        }
    }

    /// The id of the request whose answer the taker took from `text` (a
    /// body, an event's data): read once, not checked and copied into an
    /// event first. `first` runs before an answer is offered. Nothing is
    /// taken once the session is closed.
    pub(super) fn took(&self, text: &str, first: impl FnOnce()) -> Option<i64> {
        (!self.closed.load(Ordering::SeqCst)).then(|| taken_id(self.taker.as_deref(), text, first)).flatten()
    }
}

/// Reading what the server answered.
impl Session {
    pub(super) async fn read_json(
        &self,
        body: hyper::body::Incoming,
        id: &RequestId,
        initialize: bool,
        answer: Answer,
    ) -> Result<Option<TransportEvent>, Failure> {
        let bytes = Limited::new(body, self.spec.max_message_bytes).collect().await.map_err(|error| {
            // The request is lost with its answer, in either era.
            Failure::Broken(format!("reading the answer from {} failed: {}", self.spec.url, error_chain(&*error)))
        })?;
        let bytes = bytes.to_bytes();
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Failure::Plain(format!("the answer from {} is not UTF-8", self.spec.url)))?;
        if answer == Answer::Deliver && !initialize && self.took(text, || {}).is_some() {
            return Ok(None);
        }
        let event = parse_message(text).map_err(|problem| {
            Failure::Plain(format!("the answer from {} is not a JSON-RPC message: {problem}", self.spec.url))
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
    pub(super) fn note_protocol_version(&self, event: &TransportEvent, id: &RequestId) {
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
    pub(super) async fn error_body(&self, mut body: hyper::body::Incoming) -> String {
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
}
