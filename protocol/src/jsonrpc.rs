//! The JSON-RPC 2.0 envelope.
//!
//! MCP is JSON-RPC 2.0: a message is a request (has `method` and `id`), a
//! notification (`method`, no `id`) or a response (`id` plus `result` or
//! `error`). [`Message::parse`] sorts a line into one of the three without
//! looking inside `params` or `result`; the MCP layer decodes those later, so
//! a server that sends an odd payload costs one call, not the connection.
//!
//! [`RawResponse::parse`] is the hot path beside it: most of what a server
//! says is the successful answer to a call, and that answer's only reader
//! decodes it into its own type. So for those lines only the envelope is
//! read, and `result` stays the server's text. Building a [`Value`] tree
//! first and then walking it into the reader's type was about a quarter of
//! Warden's CPU per call (`benches/call_latency.rs`, 32 callers).

mod answer_head;

use std::fmt;

use serde::de::{Error as _, Unexpected, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

pub(crate) use answer_head::answer_head;

/// A request id: JSON-RPC allows strings and numbers, and servers use both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id (Warden's own requests use these).
    Number(i64),
    /// A string id.
    String(String),
}

/// Read straight from the token: serde's `untagged` first buffers the value
/// and then tries each variant in turn, which was a tenth of reading a
/// response's envelope on every answer (callgrind, `benches/call_latency.rs`).
impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;

        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request id (a string or an integer)")
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(n))
            }

            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<RequestId, E> {
                i64::try_from(n).map(RequestId::Number).map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self))
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(s.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<RequestId, E> {
                Ok(RequestId::String(s))
            }
        }

        deserializer.deserialize_any(IdVisitor)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "\"{s}\""),
        }
    }
}

/// A JSON-RPC error code, with the codes the specification names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// The message was not valid JSON.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON was not a valid request.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not supported.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// The parameters were wrong.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// The peer failed internally.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// MCP: the resource a request named does not exist.
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP 2025-11-25: the request needs URL elicitations completed first
    /// (`data.elicitations`).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
    /// MCP 2026-07-28: the request's HTTP headers disagree with its body.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// MCP 2026-07-28: the request needs a client capability it did not
    /// declare (`data.requiredCapabilities`).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// MCP 2026-07-28: the server does not speak the request's protocol
    /// version (`data.supported` lists the ones it does).
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// Warden's own, never sent by a peer: a call to a server of another
    /// cluster node came back without a result (its message says whether
    /// it ran: not run, or may or may not have taken effect).
    pub const CLUSTER_CALL_FAILED: ErrorCode = ErrorCode(-32033);
    /// Warden's own, never sent by a peer: the answer was over the size
    /// limit and was not read (made by the transport for the request it
    /// answered).
    pub const ANSWER_TOO_LARGE: ErrorCode = ErrorCode(-32099);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of a failed response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// What kind of failure.
    pub code: ErrorCode,
    /// A short description from the peer.
    pub message: String,
    /// Anything else the peer attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }
}

/// A request: the peer must answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Matches the response to the request.
    pub id: RequestId,
    /// The method, e.g. `tools/call`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A notification: no answer expected.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A response to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers. `None` only for the error a peer
    /// sends when it could not read the request's id at all.
    pub id: Option<RequestId>,
    /// `result` or `error`.
    pub outcome: Result<Value, ErrorObject>,
}

/// A successful response whose `result` is still the text the server sent.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The `result` member, verbatim.
    pub result: Box<RawValue>,
}

impl RawResponse {
    /// Reads `text` when it is a successful response with an id; `None` for
    /// anything else. Requests, notifications, error responses and unusual
    /// lines (a `null` id, a repeated member, an escaped `"jsonrpc"`, not JSON
    /// at all) are left to [`Message::parse`], which reads them in full and
    /// says what is wrong in its own words. What this accepts,
    /// `Message::parse` reads as `Response { id: Some(id), outcome:
    /// Ok(result) }` with the same id and result, with one exception: the
    /// result is checked to be JSON, not decoded, so text that serde_json
    /// will not decode into a value (a lone surrogate escape such as
    /// `"\ud800"`, a number beyond `f64`, nesting deeper than 128) is
    /// refused by whoever decodes the result rather than here.
    pub fn parse(text: &str) -> Option<RawResponse> {
        /// The members that sort a message; any others are ignored, as
        /// [`Message::from_value`] ignores them.
        #[derive(Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            jsonrpc: Option<&'a str>,
            id: Option<RequestId>,
            #[serde(default, borrow)]
            method: Member<'a>,
            #[serde(default, borrow)]
            result: Member<'a>,
            #[serde(default, borrow)]
            error: Member<'a>,
        }

        /// A member that may be absent. Unlike `Option<&RawValue>` it tells
        /// `null` (present) from absent, as `Message::from_value` does.
        #[derive(Default)]
        struct Member<'a>(Option<&'a RawValue>);

        impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                <&RawValue>::deserialize(deserializer).map(|raw| Member(Some(raw)))
            }
        }

        let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
        match envelope {
            Envelope {
                jsonrpc: Some("2.0"),
                id: Some(id),
                method: Member(None),
                result: Member(Some(result)),
                error: Member(None),
            } => Some(RawResponse { id, result: result.to_owned() }),
            _ => None,
        }
    }
}

impl PartialEq for RawResponse {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.result.get() == other.result.get()
    }
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object (batches included: MCP since 2025-06-18 has none).
    #[error("not a JSON-RPC message: expected a JSON object, found {found}")]
    NotAnObject {
        /// What kind of JSON value it was.
        found: &'static str,
    },
    /// An object that is not a well-formed JSON-RPC 2.0 message.
    #[error("not a JSON-RPC 2.0 message: {0}")]
    Invalid(String),
}

impl Message {
    /// A request.
    pub fn request(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        Message::Request(Request { id, method: method.into(), params })
    }

    /// A notification.
    pub fn notification(method: impl Into<String>, params: Option<Value>) -> Self {
        Message::Notification(Notification { method: method.into(), params })
    }

    /// A successful response.
    pub fn result(id: RequestId, result: Value) -> Self {
        Message::Response(Response { id: Some(id), outcome: Ok(result) })
    }

    /// An error response.
    pub fn error(id: RequestId, error: ErrorObject) -> Self {
        Message::Response(Response { id: Some(id), outcome: Err(error) })
    }

    /// Reads one message from text.
    pub fn parse(text: &str) -> Result<Message, ParseError> {
        let value: Value = serde_json::from_str(text).map_err(ParseError::NotJson)?;
        Message::from_value(value)
    }

    /// Sorts a JSON value into request, notification or response.
    pub fn from_value(value: Value) -> Result<Message, ParseError> {
        let Value::Object(mut object) = value else {
            return Err(ParseError::NotAnObject { found: json_kind(&value) });
        };
        match object.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            Some(other) => return Err(ParseError::Invalid(format!("\"jsonrpc\" is {other}, expected \"2.0\""))),
            None => return Err(ParseError::Invalid("no \"jsonrpc\": \"2.0\" member".into())),
        }
        let id = match object.remove("id") {
            None | Some(Value::Null) => None,
            Some(raw) => Some(
                serde_json::from_value::<RequestId>(raw.clone())
                    .map_err(|_| ParseError::Invalid(format!("\"id\" must be a string or an integer, found {raw}")))?,
            ),
        };
        if let Some(method) = object.remove("method") {
            let Value::String(method) = method else {
                return Err(ParseError::Invalid("\"method\" must be a string".into()));
            };
            let params = object.remove("params");
            return Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            });
        }
        let outcome = match (object.remove("result"), object.remove("error")) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(serde_json::from_value::<ErrorObject>(error)
                .map_err(|e| ParseError::Invalid(format!("malformed \"error\" member: {e}")))?),
            (Some(_), Some(_)) => return Err(ParseError::Invalid("both \"result\" and \"error\" are present".into())),
            (None, None) => {
                return Err(ParseError::Invalid("neither \"method\", \"result\" nor \"error\" is present".into()))
            }
        };
        Ok(Message::Response(Response { id, outcome }))
    }

    /// The message as one line of JSON, without the newline.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a JSON-RPC message always serialises")
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request(r) => {
                map.serialize_entry("id", &r.id)?;
                map.serialize_entry("method", &r.method)?;
                if let Some(params) = &r.params {
                    map.serialize_entry("params", params)?;
                }
            }
            Message::Notification(n) => {
                map.serialize_entry("method", &n.method)?;
                if let Some(params) = &n.params {
                    map.serialize_entry("params", params)?;
                }
            }
            Message::Response(r) => {
                map.serialize_entry("id", &r.id)?;
                match &r.outcome {
                    Ok(result) => map.serialize_entry("result", result)?,
                    Err(error) => map.serialize_entry("error", error)?,
                }
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Message::from_value(value).map_err(D::Error::custom)
    }
}

/// A JSON value's kind ("an array", "a string"...), for error messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
