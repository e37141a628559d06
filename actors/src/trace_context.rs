//! W3C trace context through Warden: a call's span continues its caller's
//! trace, and the server's work continues Warden's.
//!
//! A caller's `traceparent` (and `tracestate`) arrive in the call's
//! `_meta` — where MCP clients carry them, and where the HTTP front puts
//! the `traceparent` header — and become the parent of the call's span.
//! Each attempt sends the server its own span's context in `_meta`, the
//! 2026-07-28 convention, so the server's spans hang under Warden's.
//!
//! Without an exporter (no `[telemetry]`), Warden's spans have no
//! OpenTelemetry context: the caller's `_meta` then reaches the server as
//! it came, and the server's spans hang under the caller's directly.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The `_meta` keys W3C trace context travels in.
const KEYS: [&str; 2] = ["traceparent", "tracestate"];

/// Makes `span` a child of the trace `meta` carries, if it carries one —
/// unless `span` already has a traced parent here (a front's request span
/// took the caller's context first).
pub fn continue_trace(span: &tracing::Span, meta: &Map<String, Value>) {
    if !meta.contains_key("traceparent") || tracing::Span::current().context().span().span_context().is_valid() {
        return;
    }
    let carrier: HashMap<String, String> =
        KEYS.iter().filter_map(|key| Some((key.to_string(), meta.get(*key)?.as_str()?.to_string()))).collect();
    let parent = TraceContextPropagator::new().extract(&carrier);
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

/// `meta` with `span`'s trace context in place of the caller's, when the
/// span has one (traces are exported); `None` when it is to be sent as is.
pub(crate) fn for_server(span: &tracing::Span, meta: &Map<String, Value>) -> Option<Map<String, Value>> {
    let context: Context = span.context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    let mut meta = meta.clone();
    for key in KEYS {
        meta.remove(key);
    }
    meta.extend(carrier.into_iter().map(|(key, value)| (key, Value::String(value))));
    Some(meta)
}
