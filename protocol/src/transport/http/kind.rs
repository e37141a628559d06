//! What kind of message a POST carries, read from its JSON before it is
//! sent: a request someone waits for (and its trace context, sent as a
//! header too), or a notification or response that expects 202. A
//! request in the 2026-07-28 envelope also says what its headers mirror.

use hyper::header::HeaderValue;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsonrpc::RequestId;
use crate::modern::header_text;

/// What was POSTed, as far as the transport cares.
#[derive(Debug)]
pub(super) enum Kind {
    /// A request: someone waits for the answer with this id. Its
    /// `_meta.traceparent` is also sent as the W3C `traceparent` header,
    /// for HTTP servers and proxies that trace by headers.
    Request { id: RequestId, initialize: bool, traceparent: Option<HeaderValue>, modern: Option<Box<Modern>> },
    /// A notification or a response: expects 202. `initialized` marks
    /// `notifications/initialized`, after which the GET stream is opened.
    Other { initialized: bool },
}

/// A 2026-07-28 request: no session; its version, method and name go in
/// headers too.
#[derive(Debug)]
pub(super) struct Modern {
    /// `MCP-Protocol-Version`.
    pub(super) version: HeaderValue,
    /// `Mcp-Method`.
    pub(super) method: HeaderValue,
    /// `Mcp-Name`: the tool or prompt name, or the resource URI.
    pub(super) name: Option<HeaderValue>,
    /// The tool called (`tools/call`), whose `x-mcp-header` parameters
    /// become `Mcp-Param-*` headers.
    pub(super) tool: Option<String>,
    /// `tools/list`: its answer is vetted for invalid declarations.
    pub(super) lists_tools: bool,
    /// `server/discover`, the era probe: a legacy server's refusal of it
    /// is expected, not a fault to report.
    pub(super) probes: bool,
}

impl Kind {
    /// Whether this is the era probe (`server/discover`).
    pub(super) fn is_probe(&self) -> bool {
        matches!(self, Kind::Request { modern: Some(modern), .. } if modern.probes)
    }

    pub(super) fn of(json: &[u8]) -> Kind {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            id: Option<RequestId>,
            #[serde(borrow)]
            method: Option<&'a str>,
            #[serde(default)]
            params: Option<Params>,
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "_meta", default)]
            meta: Option<Meta>,
            #[serde(default)]
            name: Option<Box<RawValue>>,
            #[serde(default)]
            uri: Option<Box<RawValue>>,
        }
        #[derive(Deserialize)]
        struct Meta {
            #[serde(default)]
            traceparent: Option<String>,
            #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
            version: Option<String>,
        }
        match serde_json::from_slice::<Envelope<'_>>(json) {
            Ok(Envelope { id: Some(id), method: Some(method), params }) => {
                let (meta, name, uri) = match params {
                    Some(Params { meta, name, uri }) => (meta, name, uri),
                    None => (None, None, None),
                };
                let (traceparent, version) = match meta {
                    Some(Meta { traceparent, version }) => (traceparent, version),
                    None => (None, None),
                };
                let traceparent = traceparent.and_then(|value| HeaderValue::from_str(&value).ok());
                let modern = version.and_then(|version| modern(method, &version, name, uri)).map(Box::new);
                Kind::Request { id, initialize: method == "initialize", traceparent, modern }
            }
            Ok(Envelope { id: None, method, .. }) => {
                Kind::Other { initialized: method == Some("notifications/initialized") }
            }
            _ => Kind::Other { initialized: false },
        }
    }
}

/// The headers of a modern request of `method`.
fn modern(method: &str, version: &str, name: Option<Box<RawValue>>, uri: Option<Box<RawValue>>) -> Option<Modern> {
    let text = |raw: Option<Box<RawValue>>| raw.and_then(|raw| serde_json::from_str::<String>(raw.get()).ok());
    let named = match method {
        "tools/call" | "prompts/get" => text(name),
        "resources/read" => text(uri),
        _ => None,
    };
    Some(Modern {
        version: HeaderValue::from_str(version).ok()?,
        method: HeaderValue::from_str(&header_text(method)).ok()?,
        name: named.as_deref().and_then(|named| HeaderValue::from_str(&header_text(named)).ok()),
        tool: if method == "tools/call" { named } else { None },
        lists_tools: method == "tools/list",
        probes: method == "server/discover",
    })
}
