//! A 2026-07-28 request over Streamable HTTP: no session (no
//! `Mcp-Session-Id`, no GET stream, nothing to DELETE), and headers that
//! mirror the body for proxies — `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, and `Mcp-Param-*` for the tool parameters a server marks
//! with `x-mcp-header`.
//!
//! What those headers need is learned here, as the server's `tools/list`
//! answers pass through: each tool's declared parameters are remembered,
//! and a tool whose declaration breaks the revision's rules is left out
//! of the list (the revision says such a tool must not be used over HTTP),
//! with a warning naming it and why.
//!
//! A modern server refuses a request with an HTTP error status and a
//! JSON-RPC error body (`400` with `-32022` "unsupported protocol
//! version", `404` with `-32601`): that error is the request's answer, so
//! that what asked sees the server's own code — the era probe tells a
//! modern server's refusal from a legacy server's by it.

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::kind::Modern;
use super::{lock, parse_message, Session, VERSION_HEADER};
use crate::jsonrpc::{Message, RawResponse, RequestId, Response};
use crate::modern::{header_params, param_headers, HeaderParam};
use crate::transport::TransportEvent;

/// The `x-mcp-header` parameters of a server's tools, by tool name.
pub(super) type HeaderParams = std::collections::HashMap<String, Vec<HeaderParam>>;

impl Session {
    /// Adds a modern request's headers to `headers`, which already hold
    /// the configured ones; `json` is its body, for `Mcp-Param-*`.
    pub(super) fn add_modern_headers(&self, headers: &mut HeaderMap, modern: &Modern, json: &[u8]) {
        headers.insert(HeaderName::from_static(VERSION_HEADER), modern.version.clone());
        headers.insert(HeaderName::from_static("mcp-method"), modern.method.clone());
        if let Some(name) = &modern.name {
            headers.insert(HeaderName::from_static("mcp-name"), name.clone());
        }
        let Some(tool) = &modern.tool else { return };
        let Some(params) = lock(&self.header_params).get(tool).cloned() else { return };
        let arguments = serde_json::from_slice::<Value>(json)
            .ok()
            .and_then(|mut request| request.pointer_mut("/params/arguments").map(Value::take))
            .unwrap_or(Value::Null);
        for (name, value) in param_headers(&params, &arguments) {
            if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value)) {
                headers.insert(name, value);
            }
        }
    }

    /// The answer an error status carries for request `id` when its body
    /// is a JSON-RPC error; `None` when it is anything else.
    pub(super) fn refusal_answer(&self, body: &str, id: &RequestId) -> Option<TransportEvent> {
        match parse_message(body) {
            Ok(TransportEvent::Message(Message::Response(Response { outcome: Err(error), .. }))) => {
                Some(TransportEvent::Message(Message::error(id.clone(), error)))
            }
            _ => None,
        }
    }

    /// A `tools/list` answer with the tools whose `x-mcp-header`
    /// declaration is invalid left out, the others' parameters remembered.
    pub(super) fn vet_tools(&self, event: TransportEvent) -> TransportEvent {
        let TransportEvent::Response(RawResponse { id, result }) = event else { return event };
        let mut answer = match serde_json::from_str::<Map<String, Value>>(result.get()) {
            Ok(answer) => answer,
            Err(_) => return TransportEvent::Response(RawResponse { id, result }),
        };
        let Some(Value::Array(tools)) = answer.get_mut("tools") else {
            return TransportEvent::Response(RawResponse { id, result });
        };
        let mut known = lock(&self.header_params);
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            match header_params(tool.get("inputSchema").unwrap_or(&Value::Null)) {
                Ok(params) if params.is_empty() => {
                    known.remove(&name);
                    true
                }
                Ok(params) => {
                    known.insert(name, params);
                    true
                }
                Err(problem) => {
                    tracing::warn!(
                        server = %self.spec.server,
                        "MCP '{}': tool '{name}' left out: {problem} (MCP 2026-07-28 does not let a client use it over HTTP)",
                        self.spec.server
                    );
                    known.remove(&name);
                    false
                }
            }
        });
        drop(known);
        let result = serde_json::value::to_raw_value(&answer).expect("a JSON value always serialises");
        TransportEvent::Response(RawResponse { id, result })
    }
}
