//! 2026-07-28 requests on the front: no `initialize`, no session. Each
//! request carries its protocol version and the client's capabilities in
//! `_meta`, and is answered on its own, whatever connection or session
//! (if any) it came on — so the front keeps nothing of such a client
//! between requests, and any daemon replica could answer it. What remains
//! per client is only what lives as long as one request: a call in flight,
//! and a `subscriptions/listen` (`listen.rs`).
//!
//! What differs from the earlier revisions: `server/discover` says what
//! the front speaks and offers; `ping`, `logging/setLevel` and
//! `resources/subscribe`/`unsubscribe` are gone (answered "method not
//! found", saying what replaced them); every result says `resultType:
//! "complete"` and names the front in `_meta`; lists say how long they may
//! be cached (`ttlMs: 0`, `cacheScope: "private"`: a list depends on who
//! asks and changes when servers do); a resource that is not found is
//! `-32602`. A request whose envelope is malformed, or names a version the
//! front does not speak per request, is refused before anything runs.
//!
//! A call whose server asks the client something (or that needs the
//! client's approval) is answered `input_required` and waits, parked,
//! for the client's retry (`mrtr.rs`).

use serde_json::{json, Map, Value};
use warden_protocol::{
    is_modern, ErrorCode, ErrorObject, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_KEY, SERVER_INFO_KEY, SUPPORTED_PROTOCOL_VERSIONS,
};

use super::handshake::instructions;
use super::{error, error_answer, Outbox, Session};

/// A 2026-07-28 request's envelope, as far as the front needs it.
pub(crate) struct Modern {
    /// The client's name, for logs.
    pub(crate) client: String,
}

/// What a request's `_meta` says of its era.
pub(crate) enum Envelope {
    /// No protocol version in `_meta`: a request of the session's era.
    Legacy,
    /// A well-formed 2026-07-28 envelope.
    Modern(Modern),
    /// A 2026-07-28 envelope the front refuses, and why.
    Refused(ErrorObject),
}

/// Reads a request's envelope from its params.
pub(crate) fn envelope(params: Option<&Value>) -> Envelope {
    let meta = params.and_then(|params| params.get("_meta"));
    let Some(version) = meta.and_then(|meta| meta.get(PROTOCOL_VERSION_KEY)) else {
        return Envelope::Legacy;
    };
    let Some(version) = version.as_str() else {
        let message = format!("`_meta` \"{PROTOCOL_VERSION_KEY}\" must be a string such as \"2026-07-28\"");
        return Envelope::Refused(ErrorObject::new(ErrorCode::INVALID_PARAMS, message));
    };
    if !is_modern(version) {
        let message = format!(
            "Warden's front does not speak MCP {version} per request: it speaks {} so, and {} through `initialize`",
            MODERN_PROTOCOL_VERSIONS.join(", "),
            SUPPORTED_PROTOCOL_VERSIONS.join(", ")
        );
        let data = json!({"supported": all_versions(), "requested": version});
        return Envelope::Refused(ErrorObject {
            code: ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            message,
            data: Some(data),
        });
    }
    if !meta.and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY)).is_some_and(Value::is_object) {
        let message = format!("a 2026-07-28 request must carry its client's capabilities in `_meta` \"{CLIENT_CAPABILITIES_KEY}\" (an object, `{{}}` for none)");
        return Envelope::Refused(ErrorObject::new(ErrorCode::INVALID_PARAMS, message));
    }
    let client = meta
        .and_then(|meta| meta.get(CLIENT_INFO_KEY))
        .and_then(|info| info.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("an unnamed client")
        .to_string();
    Envelope::Modern(Modern { client })
}

/// The error for a version the front does not speak at all.
pub(crate) fn unsupported_version(version: &str) -> ErrorObject {
    let message =
        format!("MCP-Protocol-Version '{version}' is not one this front speaks ({})", all_versions().join(", "));
    let data = json!({"supported": all_versions(), "requested": version});
    ErrorObject { code: ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, message, data: Some(data) }
}

/// Every version the front speaks, newest first.
pub(crate) fn all_versions() -> Vec<&'static str> {
    MODERN_PROTOCOL_VERSIONS.iter().chain(SUPPORTED_PROTOCOL_VERSIONS).copied().collect()
}

impl Session {
    /// The answer to one 2026-07-28 request.
    pub(super) async fn answer_modern(
        &self,
        id: &Value,
        method: &str,
        params: Option<Value>,
        reply: &Outbox,
        modern: &Modern,
    ) -> Value {
        self.inner.front.metrics.request(method);
        tracing::debug!(session = %self.who(), client = %modern.client, method, "a 2026-07-28 request");
        let params = params.unwrap_or_else(|| json!({}));
        let outcome = match method {
            "server/discover" => Ok(self.discover()),
            "subscriptions/listen" => self.listen(id, &params, reply).await,
            "initialize" | "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
                Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, removed(method)))
            }
            "tools/call" => self.call_modern(params, reply).await,
            method => self.serve(method, params, reply, false).await,
        };
        match outcome {
            Ok(result) => super::result(id.clone(), complete(method, result)),
            // 2026-07-28 says "invalid params" for a resource not found.
            Err(ErrorObject { code: ErrorCode::RESOURCE_NOT_FOUND, message, .. }) => {
                error(id, ErrorCode::INVALID_PARAMS, &message)
            }
            Err(problem) => error_answer(id, problem),
        }
    }

    /// `server/discover`: what the front speaks, and what Warden and the
    /// servers of the client's view can honour.
    fn discover(&self) -> Value {
        let snapshot = self.inner.front.warden.snapshot();
        let mut capabilities = self.capabilities(&snapshot);
        if let Some(capabilities) = capabilities.as_object_mut() {
            // Log messages need a per-request level the front does not
            // honour yet; resource updates come through `subscriptions/listen`.
            capabilities.remove("logging");
            if let Some(resources) = capabilities.get_mut("resources").and_then(Value::as_object_mut) {
                resources.remove("subscribe");
            }
        }
        json!({
            "supportedVersions": all_versions(),
            "capabilities": capabilities,
            "instructions": instructions(&self.inner.front, &snapshot, &self.inner.view),
        })
    }
}

/// What replaced a method 2026-07-28 removed.
fn removed(method: &str) -> String {
    let instead = match method {
        "initialize" => "every request carries its version and capabilities in `_meta`; `server/discover` says what the front speaks",
        "ping" => "a request's own answer shows the front is there",
        "logging/setLevel" => "a request sets its log level in `_meta`",
        _ => "`subscriptions/listen` with `resourceSubscriptions`",
    };
    format!("`{method}` is not part of MCP 2026-07-28: {instead}")
}

/// A result as 2026-07-28 writes it: `resultType`, the front's name in
/// `_meta`, and how long a list may be cached.
fn complete(method: &str, result: Value) -> Value {
    let Value::Object(mut result) = result else { return result };
    result.entry("resultType").or_insert_with(|| json!("complete"));
    if matches!(
        method,
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    ) {
        result.entry("ttlMs").or_insert_with(|| json!(0));
        result.entry("cacheScope").or_insert_with(|| json!("private"));
    }
    let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(SERVER_INFO_KEY.into(), json!({"name": "warden", "version": env!("CARGO_PKG_VERSION")}));
    }
    Value::Object(result)
}
