//! Reading what a server answers: JSON bodies, error bodies, media types,
//! and errors told with their causes.

use std::sync::Mutex;

use http_body_util::{BodyExt, Limited};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use serde::Deserialize;

use super::session::{Answer, Failure, Session};
use super::{tls, BODY_EXCERPT_CHARS};
use crate::jsonrpc::{Message, RawResponse, RequestId};
use crate::transport::{excerpt, TransportEvent};

impl Session {
    pub(super) async fn read_json(
        &self,
        body: hyper::body::Incoming,
        id: &RequestId,
        initialize: bool,
        answer: Answer,
    ) -> Result<Option<TransportEvent>, Failure> {
        let bytes = Limited::new(body, self.spec.max_message_bytes).collect().await.map_err(|error| {
            Failure::Plain(format!("reading the answer from {} failed: {}", self.spec.url, error_chain(&*error)))
        })?;
        let bytes = bytes.to_bytes();
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Failure::Plain(format!("the answer from {} is not UTF-8", self.spec.url)))?;
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

/// Reads one message as a transport event, successful responses raw.
pub(super) fn parse_message(text: &str) -> Result<TransportEvent, String> {
    if let Some(response) = RawResponse::parse(text) {
        return Ok(TransportEvent::Response(response));
    }
    match Message::parse(text) {
        Ok(message) => Ok(TransportEvent::Message(message)),
        Err(error) => Err(format!("{error} (it starts: `{}`)", excerpt(text, 80))),
    }
}

/// The media type of a response, lowercase, without parameters.
pub(super) fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether `event` is the response to request `id`.
pub(super) fn answers(event: &TransportEvent, id: &RequestId) -> bool {
    match event {
        TransportEvent::Response(response) => &response.id == id,
        TransportEvent::Message(Message::Response(response)) => response.id.as_ref() == Some(id),
        _ => false,
    }
}

/// An error and its causes, `: `-separated: hyper's own text alone
/// ("client error (Connect)") does not say what went wrong.
/// A failed TLS handshake is told as what it means instead.
pub(super) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
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

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
