//! A request made on behalf of a tool call, as the caller hands it to its
//! server: the params already serialised, so the actor (or the lane) only
//! frames them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::Params;
use crate::client_features::AskContext;
use crate::progress::ProgressSink;
use crate::tickets::fresh_ticket;

/// A request made for a tool call: `tools/call` for a server's own tool,
/// or one of the requests a wrapper tool makes (`resources/read`, ...).
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The namespaced name, for errors the caller reads.
    pub name: String,
    /// The JSON-RPC method.
    pub method: &'static str,
    /// The params, serialised by the caller into the line that carries
    /// them down the lane; the actor, which every call of a server passes
    /// through otherwise, only frames them.
    pub params: Params,
    /// When the caller stops waiting (earlier attempts, after a crash, have
    /// used some of the time).
    pub deadline: Instant,
    /// The call's whole timeout, for the error the caller reads.
    pub timeout: Duration,
    /// Names this call to [`ServerMsg::CancelCall`] and, when progress is
    /// asked for, is its `progressToken`: unique in the process.
    pub ticket: u64,
    /// Where the server's progress notifications for this call go.
    pub progress: Option<ProgressSink>,
    /// Where its log messages go, when it asked for them.
    pub logs: Option<crate::progress::CallLogs>,
    /// Who the call is for and who answers its server's questions.
    pub(crate) asks: Option<Arc<AskContext>>,
    /// The tool must run as a task (2025-11-25: `execution.taskSupport`
    /// is `required`); it does when the server offers tasks for tools.
    pub(crate) as_task: bool,
    /// The agent it is made for (`None`: the host), whom an answer the
    /// server marks private is kept for.
    pub(crate) caller: Option<Arc<str>>,
}

impl ToolCall {
    /// A `tools/call` of the server's tool `tool` with `arguments`, and
    /// `meta` as its `_meta` (none when empty).
    pub fn new(
        name: impl Into<String>,
        tool: &str,
        arguments: &Map<String, Value>,
        meta: &Map<String, Value>,
        deadline: Instant,
        timeout: Duration,
    ) -> ToolCall {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            name: &'a str,
            arguments: &'a Map<String, Value>,
            #[serde(rename = "_meta", skip_serializing_if = "Map::is_empty")]
            meta: &'a Map<String, Value>,
        }
        ToolCall::request(name, "tools/call", &Params { name: tool, arguments, meta }, deadline, timeout)
    }

    /// Any other request made on behalf of tool `name`.
    pub fn request(
        name: impl Into<String>,
        method: &'static str,
        params: &impl serde::Serialize,
        deadline: Instant,
        timeout: Duration,
    ) -> ToolCall {
        let params = Params::new(method, params);
        ToolCall {
            name: name.into(),
            method,
            params,
            deadline,
            timeout,
            ticket: fresh_ticket(),
            progress: None,
            logs: None,
            asks: None,
            as_task: false,
            caller: None,
        }
    }
}
