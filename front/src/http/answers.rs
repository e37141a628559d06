//! What the HTTP face answers with around MCP: a status and a body, and
//! the refusals every check ends in — a JSON-RPC error body saying what
//! was wrong and what to do, so a client's log explains itself.

use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use serde_json::Value;
use warden_protocol::ErrorCode;

use super::sse::{self, Body};
use crate::session::{error, error_answer};

/// One HTTP answer.
pub(super) type Answer = Response<Body>;

pub(super) fn respond(status: StatusCode, body: Body) -> Answer {
    let mut answer = Response::new(body);
    *answer.status_mut() = status;
    answer
}

pub(super) fn json_answer(message: &Value) -> Answer {
    let mut answer = respond(StatusCode::OK, sse::json(message));
    answer.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    answer
}

pub(super) fn rpc_error(status: StatusCode, code: ErrorCode, message: &str) -> Answer {
    let mut answer = json_answer(&error(&Value::Null, code, message));
    *answer.status_mut() = status;
    answer
}

/// A refusal before any MCP is spoken: a JSON-RPC error body saying why.
pub(super) fn refuse(status: StatusCode, message: &str) -> Answer {
    rpc_error(status, ErrorCode::INVALID_REQUEST, message)
}

/// A check's refusal, as it is answered.
pub(super) fn refused(refusal: super::checks::Refusal) -> Answer {
    let mut answer = json_answer(&error_answer(&Value::Null, refusal.error));
    *answer.status_mut() = refusal.status;
    for (name, value) in refusal.headers {
        answer.headers_mut().insert(name, value);
    }
    answer
}

pub(super) fn unknown_session() -> Answer {
    refuse(StatusCode::NOT_FOUND, "unknown or expired session: send `initialize` again for a new one")
}

pub(super) fn not_found(path: &str) -> Answer {
    refuse(
        StatusCode::NOT_FOUND,
        &format!("no MCP endpoint at '{path}': use /mcp, /mcp/servers/<name> or /mcp/agents/<agent>"),
    )
}
