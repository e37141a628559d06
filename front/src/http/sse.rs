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

use super::super::json_text::json_text;

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

/// The GET stream: every numbered event, for as long as the client reads,
/// its id `TAG.N` (`TAG`: the front that numbered it).
pub(super) fn notice_stream(messages: mpsc::Receiver<(u64, Value)>, tag: String) -> Body {
    let events = stream::unfold((messages, tag), |(mut messages, tag)| async move {
        let (id, message) = messages.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(event(&format!("{tag}.{id}"), &message))), (messages, tag)))
    });
    StreamBody::new(events).boxed()
}

#[cfg(test)]
mod tests;
