//! What one call reports while it runs: its progress, and (2026-07-28)
//! its log messages.
//!
//! A caller that wants progress passes a [`ProgressSink`] in its
//! [`CallOptions`](crate::CallOptions). Warden then asks the server for it
//! (a `progressToken` in the request's `_meta`, unique to the call) and
//! forwards each `notifications/progress` carrying that token to the sink.
//! The sink is bounded and progress is lossy by nature: when the caller
//! does not keep up, the extra notifications are dropped, never queued
//! without bound, and the call itself is never slowed by a slow reader.

use serde_json::Value;
use warden_protocol::LogLevel;

/// One `notifications/progress` for a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far along (increases with each notification).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

/// Where a call's progress goes: the sending half of a bounded channel.
pub type ProgressSink = tokio::sync::mpsc::Sender<Progress>;

impl Progress {
    /// The progress in a `notifications/progress`'s params, if well formed.
    pub(crate) fn from_params(params: &Value) -> Option<Progress> {
        Some(Progress {
            progress: params.get("progress")?.as_f64()?,
            total: params.get("total").and_then(Value::as_f64),
            message: params.get("message").and_then(Value::as_str).map(str::to_string),
        })
    }
}

/// Where a call's log messages go: the `notifications/message` params as
/// the server wrote them.
pub type LogSink = tokio::sync::mpsc::Sender<Value>;

/// A call's own log messages, asked for at `level` and above: 2026-07-28
/// asks per request (`io.modelcontextprotocol/logLevel` in `_meta`), and a
/// server sends them with that request's answer. Bounded and lossy, like
/// progress.
#[derive(Debug, Clone)]
pub struct CallLogs {
    /// The least severe level wanted.
    pub level: LogLevel,
    /// Where they go.
    pub sink: LogSink,
}

impl CallLogs {
    /// Passes on a message of the call's, if at or above its level.
    pub(crate) fn offer(&self, params: Value) {
        if LogLevel::of(Some(&params)) >= self.level {
            let _ = self.sink.try_send(params);
        }
    }
}
