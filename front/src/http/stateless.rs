//! 2026-07-28 requests over the HTTP face: no session. A POST whose body
//! carries the revision's `_meta` envelope is answered on its own, by a
//! session made for it and dropped after it (an `Mcp-Session-Id` it may
//! carry is ignored, as the revision says), so nothing of the client is
//! kept between requests and any daemon replica could answer the next.
//!
//! Its headers must mirror its body — `MCP-Protocol-Version` the
//! envelope's version, `Mcp-Method` the method, `Mcp-Name` the tool or
//! prompt name or resource URI (Base64 sentinel decoded) — else 400 with
//! `-32020` (header mismatch): a proxy routing by them must not be lied
//! to. The answer's status says what its error is: 400 for invalid params,
//! an unsupported version or a mismatch, 404 for a method the front does
//! not serve. The answer is JSON, or an event stream when the client
//! accepts one and something comes before the answer (progress it asked
//! for) or instead of one (`subscriptions/listen`); closing the stream
//! cancels the request.

use std::sync::Arc;

use hyper::header::HeaderValue;
use hyper::StatusCode;
use serde_json::Value;
use tokio::sync::mpsc;
use warden_protocol::{header_decoded, ErrorCode};

use super::super::session::{Received, Session};
use super::super::view::View;
use super::{json_answer, next_stream, refuse, respond, rpc_error, sse, Answer, Caller, HttpFront};

/// What a POST's headers say of its body.
pub(super) struct Mirrored {
    pub(super) version: Option<String>,
    pub(super) method: Option<String>,
    pub(super) name: Option<String>,
}

impl HttpFront {
    pub(super) async fn stateless(
        &self,
        caller: &Caller,
        message: Value,
        mirrored: &Mirrored,
        wants_stream: bool,
    ) -> Answer {
        if let Err(problem) = mismatch(&message, mirrored) {
            return rpc_error(StatusCode::BAD_REQUEST, ErrorCode::HEADER_MISMATCH, &problem);
        }
        // A retry of a call another replica parked is that replica's to answer.
        if let Some(answer) = Box::pin(self.relayed_elsewhere(caller, &message, mirrored)).await {
            return answer;
        }
        let view = View::of(&self.front.warden, caller.agent.as_deref(), caller.server.as_deref(), self.resource_tools);
        let view = match view {
            Ok(view) => view,
            Err(error) => return refuse(StatusCode::NOT_FOUND, &error.to_string()),
        };
        // The same owner for each request of the same identity and
        // endpoint: what resumes a parked call (`requestState`) must come
        // from it.
        let (subject, path) = caller.owner();
        let session =
            Session::owned(Arc::clone(&self.front), view, format!("{subject} at {path}"), &caller.described());
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default().to_string();
        let request_id = message.get("id").cloned().unwrap_or(Value::Null);
        // A stream when something may come before the answer: progress, a
        // call's own log messages, a subscription's notifications.
        let level = meta(&message).and_then(|meta| meta.get(warden_protocol::LOG_LEVEL_KEY));
        let logs =
            method == "tools/call" && level.and_then(Value::as_str).and_then(super::super::LogLevel::parse).is_some();
        let streams = meta(&message).is_some_and(|meta| meta.get("progressToken").is_some())
            || logs
            || method == "subscriptions/listen";
        let (outbox, answers) = mpsc::channel(64);
        let outbox_of_stream = outbox.clone();
        match session.receive(message, outbox) {
            Received::Accepted | Received::NotHere => respond(StatusCode::ACCEPTED, sse::empty()),
            Received::Answered(answer) => with_status(json_answer(&answer), &answer),
            Received::Request(pending) if wants_stream && streams => {
                let task = tokio::spawn(async move {
                    if let Some(answer) = pending.await {
                        let _ = outbox_of_stream.send(answer).await;
                    }
                });
                let guard = super::super::AbortOnDrop(task.abort_handle());
                let mut answer = respond(StatusCode::OK, sse::answer_stream(answers, request_id, next_stream(), guard));
                answer.headers_mut().insert("content-type", HeaderValue::from_static("text/event-stream"));
                answer.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
                answer
            }
            Received::Request(pending) => {
                // A JSON answer carries no progress: what is reported is
                // read and dropped (the outbox must stay open: a call
                // asking its client something is followed through it).
                let mut answers = answers;
                tokio::spawn(async move { while answers.recv().await.is_some() {} });
                match pending.await {
                    Some(answer) => with_status(json_answer(&answer), &answer),
                    None => respond(StatusCode::ACCEPTED, sse::empty()),
                }
            }
        }
    }
}

/// The HTTP status of an answer by its error, as 2026-07-28 says.
fn with_status(mut response: Answer, answer: &Value) -> Answer {
    let status = match answer
        .get("error")
        .and_then(|error| error.get("code"))
        .and_then(Value::as_i64)
        .and_then(|code| i32::try_from(code).ok())
        .map(ErrorCode)
    {
        Some(ErrorCode::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            ErrorCode::INVALID_PARAMS
            | ErrorCode::HEADER_MISMATCH
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => return response,
    };
    *response.status_mut() = status;
    response
}

/// Whether the headers mirror the body; `Err` says which does not.
fn mismatch(message: &Value, mirrored: &Mirrored) -> Result<(), String> {
    let meta_version =
        meta(message).and_then(|meta| meta.get(warden_protocol::PROTOCOL_VERSION_KEY)).and_then(Value::as_str);
    if mirrored.version.as_deref() != meta_version {
        return Err(format!(
            "the MCP-Protocol-Version header ({}) differs from the request's `_meta` version ({})",
            mirrored.version.as_deref().unwrap_or("absent"),
            meta_version.unwrap_or("absent")
        ));
    }
    let method = message.get("method").and_then(Value::as_str);
    if let Some(method) = method {
        if mirrored.method.as_deref() != Some(method) {
            let sent = mirrored.method.as_deref().unwrap_or("absent");
            return Err(format!("the Mcp-Method header ({sent}) differs from the request's method ({method})"));
        }
    }
    let named = match method {
        Some("tools/call" | "prompts/get") => message.get("params").and_then(|params| params.get("name")),
        Some("resources/read") => message.get("params").and_then(|params| params.get("uri")),
        _ => None,
    };
    if let Some(named) = named.and_then(Value::as_str) {
        let sent = mirrored.name.as_deref().and_then(header_decoded);
        if sent.as_deref() != Some(named) {
            let sent = mirrored.name.as_deref().unwrap_or("absent");
            return Err(format!("the Mcp-Name header ({sent}) differs from the name in the request ({named})"));
        }
    }
    Ok(())
}

/// A message's `params._meta`, looked up on every request (where
/// `Value::pointer` would allocate a string for each step of its path).
pub(super) fn meta(message: &Value) -> Option<&Value> {
    message.get("params")?.get("_meta")
}
