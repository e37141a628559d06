//! Bodies of the HTTP face: JSON, and Server-Sent Events streams.
//!
//! An SSE event is `id: …`, `event: message`, `data: <one JSON-RPC
//! message>` and a blank line (JSON text has no raw newlines, so one
//! `data:` line always holds it). A POST's stream ends after the answer to
//! its request; the GET stream lasts while the client reads it. Dropping a
//! body (the client went away) drops what it holds: a POST's guard then
//! cancels the request it was waiting for.

use std::convert::Infallible;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt as _, Full, StreamBody};
use hyper::body::Frame;
use serde_json::Value;
use tokio::sync::mpsc;

/// Every body the front sends.
pub(super) type Body = crate::http_server::Body;

pub(super) fn empty() -> Body {
    Full::new(Bytes::new()).boxed()
}

pub(super) fn json(value: &Value) -> Body {
    Full::new(Bytes::from(json_text(value, b"", b""))).boxed()
}

/// One SSE event.
pub(super) fn event(id: &str, message: &Value) -> Bytes {
    Bytes::from(json_text(message, format!("id: {id}\nevent: message\ndata: ").as_bytes(), b"\n\n"))
}

/// `value`'s JSON text between `before` and `after`, written into a buffer
/// sized for it up front: one grown by doubling leaves its smaller copies
/// behind, a tenth of a 1 MB answer more at its peak (`large_results`).
fn json_text(value: &Value, before: &[u8], after: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(before.len() + json_size(value) + after.len());
    text.extend_from_slice(before);
    serde_json::to_writer(&mut text, value).expect("a JSON value always serialises");
    text.extend_from_slice(after);
    text
}

/// About how long `value`'s JSON text is: exact but for escapes and numbers.
fn json_size(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|item| json_size(item) + 1).sum::<usize>(),
        Value::Object(map) => 2 + map.iter().map(|(key, item)| key.len() + 4 + json_size(item)).sum::<usize>(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
    }
}

/// A POST's stream: every message from `messages` until the one whose id
/// is `id` (the answer), which ends it. `guard` lives as long as the body.
pub(super) fn answer_stream<G: Send + Sync + 'static>(
    messages: mpsc::Receiver<Value>,
    id: Value,
    stream_id: u64,
    guard: G,
) -> Body {
    let state = Some((messages, 0u64, guard));
    let events = stream::unfold(state, move |state| {
        let id = id.clone();
        async move {
            let (mut messages, n, guard) = state?;
            let message = messages.recv().await?;
            let is_answer = message.get("id") == Some(&id) && message.get("method").is_none();
            let frame = Frame::data(event(&format!("r{stream_id}-{n}"), &message));
            let next = (!is_answer).then_some((messages, n + 1, guard));
            Some((Ok::<_, Infallible>(frame), next))
        }
    });
    StreamBody::new(events).boxed()
}

/// The GET stream: every numbered event, for as long as the client reads.
pub(super) fn notice_stream<G: Send + Sync + 'static>(messages: mpsc::Receiver<(u64, Value)>, guard: G) -> Body {
    let events = stream::unfold((messages, guard), |(mut messages, guard)| async move {
        let (id, message) = messages.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(event(&id.to_string(), &message))), (messages, guard)))
    });
    StreamBody::new(events).boxed()
}

#[cfg(test)]
mod tests;
