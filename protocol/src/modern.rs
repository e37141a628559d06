//! MCP 2026-07-28, the "modern" era, as a client speaks it.
//!
//! The revision drops the `initialize` handshake: every request carries
//! its protocol version, the client's capabilities and its name in
//! `_meta` (the [`Envelope`]), and a server says what it speaks when asked
//! `server/discover`. Servers of the earlier, "legacy" era answer
//! `initialize` instead, and many servers speak both. Warden finds out
//! which a server is by probing (the verdict is [`judge_discover`]'s,
//! following the revision's rules: only positive evidence of a modern
//! server keeps Warden modern; anything else falls back to `initialize`).
//!
//! A modern server cannot send requests of its own; it asks for what it
//! needs (an elicitation, a sample, the roots) by answering a call with an
//! [`InputRequired`] result, and the client retries the call with the
//! answers ([`retry_params`]). These are the pieces of that pattern that
//! are about the wire; who answers lives in the actors.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::jsonrpc::{ErrorCode, ErrorObject};

mod envelope;
mod headers;
use crate::mcp::{Implementation, InitializeResult, ServerCapabilities};
pub use envelope::Envelope;
pub use headers::{header_decoded, header_params, header_text, param_headers, HeaderParam};

/// The modern versions Warden speaks, newest first.
pub const MODERN_PROTOCOL_VERSIONS: &[&str] = &["2026-07-28"];

/// The modern version Warden asks for first.
pub const LATEST_MODERN_VERSION: &str = "2026-07-28";

/// `_meta` key: the request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities, for this request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of a result: the server's name and version.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key: the least severe log level the client wants messages of,
/// for this request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The 2026-07-28 tasks extension, as capabilities name it.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key of a notification on a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// Whether `version` is a modern one Warden speaks.
pub fn is_modern(version: &str) -> bool {
    MODERN_PROTOCOL_VERSIONS.contains(&version)
}

/// A `server/discover` answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The protocol versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What it can do.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Usage hints for the model.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The result's `_meta`, where the server names itself.
    #[serde(default, rename = "_meta")]
    pub meta: Map<String, Value>,
}

impl DiscoverResult {
    /// What the rest of Warden knows as a server's handshake answer: the
    /// version in use, capabilities, identity (`unnamed` when the server
    /// did not say) and instructions.
    pub fn into_initialize_result(self, version: &str) -> InitializeResult {
        let server_info = self
            .meta
            .get(SERVER_INFO_KEY)
            .and_then(|info| serde_json::from_value::<Implementation>(info.clone()).ok())
            .unwrap_or_else(|| Implementation { name: "unnamed".into(), version: String::new(), extra: Map::new() });
        InitializeResult {
            protocol_version: version.to_string(),
            capabilities: self.capabilities,
            server_info,
            instructions: self.instructions,
            extra: Map::new(),
        }
    }
}

/// What a `server/discover` probe's answer says about the server.
#[derive(Debug)]
pub enum Verdict {
    /// A modern server that speaks `version`; its discovery answer.
    Modern {
        /// The version to speak.
        version: &'static str,
        /// What it said of itself.
        result: Box<DiscoverResult>,
    },
    /// A modern server that does not speak the version asked for but does
    /// speak `version`: ask again with it.
    AskAgain {
        /// The mutual version.
        version: &'static str,
    },
    /// Not a modern server (or one that also speaks the legacy era and
    /// offers no modern version Warden speaks): use `initialize`.
    Legacy {
        /// Why, for the log.
        evidence: String,
    },
    /// A modern-only server with no version in common: nothing works.
    Incompatible {
        /// The versions it speaks.
        supported: Vec<String>,
    },
}

/// Judges a probe's answer by the revision's rules: a discovery result
/// naming a modern version Warden speaks is modern; `-32022` naming one is
/// "ask again"; `-32022` naming only modern versions Warden does not speak
/// is incompatible; every other answer — any other error, a malformed
/// result, a result naming only legacy versions — is a legacy server.
pub fn judge_discover(outcome: Result<&RawValue, &ErrorObject>) -> Verdict {
    match outcome {
        Ok(raw) => match serde_json::from_str::<DiscoverResult>(raw.get()) {
            Ok(result) => match mutual_modern_version(&result.supported_versions) {
                Some(version) => Verdict::Modern { version, result: Box::new(result) },
                None => Verdict::Legacy {
                    evidence: format!(
                        "`server/discover` names only versions Warden speaks through `initialize` ({})",
                        result.supported_versions.join(", ")
                    ),
                },
            },
            Err(error) => Verdict::Legacy { evidence: format!("its `server/discover` answer is not one ({error})") },
        },
        Err(error) => match unsupported_versions(error) {
            Some(supported) => match mutual_modern_version(&supported) {
                Some(version) => Verdict::AskAgain { version },
                None if supported.iter().all(|version| is_modern_shaped(version)) => {
                    Verdict::Incompatible { supported }
                }
                None => {
                    Verdict::Legacy { evidence: format!("it speaks {} (through `initialize`)", supported.join(", ")) }
                }
            },
            None => Verdict::Legacy {
                evidence: format!("`server/discover` was answered with error {}: {}", error.code, error.message),
            },
        },
    }
}

/// A version no `initialize` handshake reaches: any version after the
/// last legacy one (versions are dates, so a later date is a later era).
fn is_modern_shaped(version: &str) -> bool {
    version > crate::mcp::LATEST_PROTOCOL_VERSION
}

/// The versions a `-32022` error lists in `data.supported`.
pub fn unsupported_versions(error: &ErrorObject) -> Option<Vec<String>> {
    if error.code != ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    let supported = error.data.as_ref()?.get("supported")?.as_array()?;
    Some(supported.iter().filter_map(Value::as_str).map(str::to_string).collect())
}

/// The newest modern version both Warden and a server speak.
pub fn mutual_modern_version(supported: &[String]) -> Option<&'static str> {
    MODERN_PROTOCOL_VERSIONS.iter().copied().find(|version| supported.iter().any(|theirs| theirs == version))
}

/// An interim answer (`resultType: "input_required"`): what the server
/// needs before it can answer the request.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// Its requests, by the server's keys: each a `{method, params}`.
    pub input_requests: Map<String, Value>,
    /// Opaque state to echo back on the retry, byte for byte.
    pub request_state: Option<String>,
}

impl InputRequired {
    /// `Some` when `result` is an interim answer (a result without
    /// `resultType` is complete); `Err` says how it is malformed.
    pub fn detect(result: &RawValue) -> Option<Result<InputRequired, String>> {
        // Cheap first: nearly every result is complete.
        if !result.get().contains("input_required") {
            return None;
        }
        let Ok(Value::Object(mut result)) = serde_json::from_str::<Value>(result.get()) else {
            return None;
        };
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return None;
        }
        let input_requests = match result.remove("inputRequests") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(requests)) => requests,
            Some(_) => return Some(Err("its `inputRequests` is not an object".into())),
        };
        let request_state = match result.remove("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(state)) => Some(state),
            Some(_) => return Some(Err("its `requestState` is not a string".into())),
        };
        if input_requests.is_empty() && request_state.is_none() {
            return Some(Err("it has neither `inputRequests` nor `requestState`".into()));
        }
        Some(Ok(InputRequired { input_requests, request_state }))
    }
}

/// The params of a retry: the original request's, with the answers in
/// `inputResponses` and the server's state echoed in `requestState` (and
/// neither left over from an earlier round).
pub fn retry_params(original: &str, responses: Map<String, Value>, state: Option<&str>) -> Box<RawValue> {
    let mut params = match serde_json::from_str::<Value>(original) {
        Ok(Value::Object(params)) => params,
        _ => Map::new(),
    };
    params.remove("inputResponses");
    params.remove("requestState");
    if !responses.is_empty() {
        params.insert("inputResponses".into(), Value::Object(responses));
    }
    if let Some(state) = state {
        params.insert("requestState".into(), Value::String(state.into()));
    }
    serde_json::value::to_raw_value(&params).expect("a JSON value always serialises")
}

#[cfg(test)]
mod tests;
