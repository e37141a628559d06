//! The legacy HTTP+SSE transport (protocol 2024-11-05), for servers that
//! predate Streamable HTTP.
//!
//! Such a server has two endpoints. The client GETs the configured URL and
//! keeps the event stream open; its first event, `endpoint`, names the URI
//! (relative to the stream's URL, or absolute) every client message is
//! POSTed to. The POSTs are answered `202 Accepted` and nothing more:
//! every response, notification and request of the server's arrives as a
//! `message` event on the one GET stream.
//!
//! MCP's backwards-compatibility rule says how a client tells them apart:
//! POST `initialize` to the URL as Streamable HTTP; a `400`, `404` or `405`
//! means an old server, so GET the same URL and wait for `endpoint`. With
//! [`HttpTransport::Sse`] Warden skips the first attempt, and with
//! [`HttpTransport::StreamableHttp`] it never falls back.
//!
//! The guarantees of the Streamable HTTP transport hold: a POST that fails
//! answers its request with a JSON-RPC error, events over the size limit
//! are reported and skipped, the configured headers go on every request
//! (the GET too) and the endpoint must be on the configured server's
//! origin, so they never go anywhere else. The GET stream *is* the
//! connection: when it ends, the connection is closed
//! ([`TransportEvent::Closed`] with why), and closing drops it. There is no
//! session to resume or re-initialise.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::{Method, StatusCode, Uri};
use tokio::sync::oneshot;

use super::{error_chain, Failure, HttpTransport, Kind, Session};
use crate::sse::{SseItem, SseParser};
use crate::transport::TransportEvent;

/// The statuses that say "not a Streamable HTTP server" to an initialize.
const OLD_SERVER: [StatusCode; 3] = [StatusCode::BAD_REQUEST, StatusCode::NOT_FOUND, StatusCode::METHOD_NOT_ALLOWED];

impl Session {
    /// Whether this message goes over the legacy transport: once it is
    /// open, everything does; with `transport = "sse"` so does the
    /// `initialize` that opens it.
    pub(super) fn uses_legacy(&self, kind: &Kind) -> bool {
        self.legacy.get().is_some()
            || (self.spec.transport == HttpTransport::Sse && matches!(kind, Kind::Request { initialize: true, .. }))
    }

    /// Whether a failed Streamable HTTP POST means an old server whose
    /// legacy transport should be tried.
    pub(super) fn falls_back(&self, failure: &Failure, kind: &Kind) -> bool {
        self.spec.transport == HttpTransport::Auto
            && matches!(kind, Kind::Request { initialize: true, .. })
            && matches!(failure, Failure::Status { status, .. } if OLD_SERVER.contains(status))
    }

    /// Tries the legacy transport after the Streamable HTTP `initialize`
    /// failed with `refused`; what failed, both ways, if it fails too.
    pub(super) async fn fall_back(self: &Arc<Self>, json: Bytes, kind: &Kind, refused: String) -> Result<(), String> {
        tracing::info!(
            server = %self.spec.server,
            "{refused}: not a Streamable HTTP server; using the legacy HTTP+SSE transport"
        );
        self.post_legacy(json, kind)
            .await
            .map_err(|problem| format!("{refused}; the legacy HTTP+SSE transport failed too: {problem}"))
    }

    /// POSTs one message to the legacy endpoint, opening the GET stream
    /// first if this is the `initialize` that starts the connection.
    pub(super) async fn post_legacy(self: &Arc<Self>, json: Bytes, kind: &Kind) -> Result<(), String> {
        let endpoint = match self.legacy.get() {
            Some(endpoint) => endpoint.clone(),
            None if matches!(kind, Kind::Request { initialize: true, .. }) => {
                let endpoint = self.open_legacy().await?;
                if self.spec.transport == HttpTransport::Sse {
                    tracing::info!(server = %self.spec.server, "using the legacy HTTP+SSE transport");
                }
                // Only the actor's one `initialize` gets here.
                let _ = self.legacy.set(endpoint.clone());
                endpoint
            }
            None => return Err(format!("{} has no legacy HTTP+SSE connection open yet", self.spec.url)),
        };
        let mut request = hyper::Request::builder()
            .method(Method::POST)
            .uri(endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(json))
            .expect("a request from a checked URI and constant headers");
        self.add_session_headers(request.headers_mut(), false);
        if let Kind::Request { traceparent: Some(traceparent), .. } = kind {
            request.headers_mut().insert("traceparent", traceparent.clone());
        }
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| format!("could not reach {endpoint}: {}", error_chain(&error)))?;
        let status = response.status();
        if !status.is_success() {
            let body = self.error_body(response.into_body()).await;
            return Err(format!("HTTP {} from {endpoint}: {body}", status.as_u16()));
        }
        // The answer comes on the GET stream; the body says nothing.
        let _ = Limited::new(response.into_body(), self.spec.max_message_bytes).collect().await;
        Ok(())
    }

    /// GETs the URL and waits for the `endpoint` event; the rest of the
    /// stream is read by a task of its own from then on.
    async fn open_legacy(self: &Arc<Self>) -> Result<Uri, String> {
        let request = self.event_stream_request(false);
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| format!("could not reach {}: {}", self.spec.url, error_chain(&error)))?;
        let status = response.status();
        if !status.is_success() {
            let body = self.error_body(response.into_body()).await;
            return Err(format!("HTTP {} from GET {}: {body}", status.as_u16(), self.spec.url));
        }
        let content_type = super::content_type(response.headers());
        if content_type != "text/event-stream" {
            return Err(format!(
                "{} answered GET with content type `{content_type}`; expected text/event-stream",
                self.spec.url
            ));
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let session = self.clone();
        let body = response.into_body();
        let mut closing = self.closing.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = session.read_legacy_stream(body, endpoint_tx) => {}
                // Closing drops the stream: that is how a legacy
                // connection ends.
                _ = closing.wait_for(|closing| *closing) => {}
            }
        });
        let endpoint = endpoint_rx.await.unwrap_or_else(|_| {
            Err(format!("the event stream from {} ended before naming an endpoint", self.spec.url))
        })?;
        resolve_endpoint(&self.uri, &endpoint)
    }

    /// Reads the GET stream until it ends: the first `endpoint` event goes
    /// to `endpoint`, every `message` event to the sink. Once the endpoint
    /// was named, the stream's end closes the connection; before, it fails
    /// the `initialize` waiting for it.
    async fn read_legacy_stream(&self, mut body: Incoming, endpoint: oneshot::Sender<Result<String, String>>) {
        let mut endpoint = Some(endpoint);
        let mut parser = SseParser::with_max_event_bytes(self.spec.max_message_bytes);
        let reason = loop {
            let chunk = match self.paced_frame(&mut body).await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(chunk) => chunk,
                    Err(_) => continue,
                },
                Some(Err(error)) => {
                    break format!("the event stream from {} broke: {}", self.spec.url, error_chain(&error))
                }
                None => break format!("the server ended the event stream from {}", self.spec.url),
            };
            let mut events = Vec::new();
            for item in parser.feed(&chunk) {
                match item {
                    SseItem::Event(event) if event.event == "endpoint" => match endpoint.take() {
                        Some(endpoint) => drop(endpoint.send(Ok(event.data))),
                        None => tracing::debug!(server = %self.spec.server, "ignored a second `endpoint` event"),
                    },
                    SseItem::Event(event) if event.event != "message" => {
                        tracing::debug!(server = %self.spec.server, "ignored an event of type `{}`", event.event)
                    }
                    item => events.extend(self.event_of(item)),
                }
            }
            match events.len() {
                0 => {}
                1 => self.deliver(events.pop().expect("one event")),
                _ => self.deliver(TransportEvent::Batch(events)),
            }
        };
        match endpoint {
            Some(endpoint) => drop(endpoint.send(Err(format!("{reason} before naming an endpoint")))),
            None => {
                tracing::info!(server = %self.spec.server, "{reason}: the legacy HTTP+SSE connection is closed");
                // Nothing is delivered after `Closed`, and closing does not
                // say it again.
                if !self.closed.swap(true, Ordering::SeqCst) {
                    (self.sink)(TransportEvent::Closed { reason });
                }
            }
        }
    }
}

/// The URI the `endpoint` event names, resolved against the stream's URL.
/// It must be on the same origin: the configured headers go there.
pub(super) fn resolve_endpoint(base: &Uri, endpoint: &str) -> Result<Uri, String> {
    let endpoint = endpoint.trim();
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map(|authority| authority.as_str()).unwrap_or("");
    let path = base.path();
    let absolute = if endpoint.contains("://") {
        endpoint.to_string()
    } else if let Some(rest) = endpoint.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if endpoint.starts_with('/') {
        format!("{scheme}://{authority}{endpoint}")
    } else if endpoint.starts_with('?') {
        format!("{scheme}://{authority}{path}{endpoint}")
    } else {
        let directory = &path[..path.rfind('/').map_or(0, |slash| slash + 1)];
        let directory = if directory.is_empty() { "/" } else { directory };
        format!("{scheme}://{authority}{directory}{endpoint}")
    };
    let uri: Uri = absolute
        .parse()
        .map_err(|error| format!("the server named an unusable message endpoint `{endpoint}`: {error}"))?;
    if uri.scheme_str() != Some(scheme) || uri.authority().map(|authority| authority.as_str()) != Some(authority) {
        return Err(format!(
            "the server named a message endpoint on another origin (`{endpoint}`); Warden posts only to {scheme}://{authority}"
        ));
    }
    Ok(uri)
}
