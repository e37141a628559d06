//! Small readers shared by the transport's modules: a message from its
//! text, a response's media type, errors told with their causes.

use std::sync::Mutex;

use hyper::header::{HeaderMap, CONTENT_TYPE};

use super::tls;
use crate::jsonrpc::{Message, RawResponse, RequestId};
use crate::transport::{excerpt, TransportEvent};

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
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
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
