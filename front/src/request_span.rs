//! A trace span per request a front client sends (`[telemetry]`): the
//! parent of what Warden does for it, and itself a child of the client's
//! trace when the request's `_meta` carries a `traceparent` (the HTTP
//! front copies the header there).

use serde_json::Value;

/// The span of one request with `method` and `params`, for `who`.
pub(crate) fn request_span(method: &str, params: Option<&Value>, who: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "mcp request",
        otel.name = %method,
        mcp.method.name = %method,
        warden.session = %who,
    );
    if let Some(meta) = params.and_then(|params| params.get("_meta")).and_then(Value::as_object) {
        warden_actors::continue_trace(&span, meta);
    }
    span
}
