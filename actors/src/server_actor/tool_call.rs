//! A request made on behalf of a tool call, as the caller hands it to its
//! server: the params already serialised, so the actor (or the lane) only
//! frames them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;
use warden_protocol::{members_len_hint, run_heavy, write_json_object, write_json_string};

use super::Params;
use crate::client_features::AskContext;
use crate::progress::ProgressSink;
use crate::tickets::fresh_ticket;

/// A request made for a tool call: `tools/call` for a server's own tool,
/// or one of the requests a wrapper tool makes (`resources/read`, ...).
#[derive(Debug, Clone)]
pub(crate) struct ToolCall {
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
    pub(crate) fn new(
        name: impl Into<String>,
        tool: &str,
        arguments: &Map<String, Value>,
        meta: &Map<String, Value>,
        deadline: Instant,
        timeout: Duration,
    ) -> ToolCall {
        let arguments_len = members_len_hint(arguments);
        let params = if arguments_len < LARGE_ARGUMENTS {
            by_serde(tool, arguments, meta)
        } else {
            // Off the worker when large (`run_heavy`).
            run_heavy(arguments_len, || by_write_json(tool, arguments, meta, arguments_len))
        };
        ToolCall::framed(name, "tools/call", params, deadline, timeout)
    }

    /// Any other request made on behalf of tool `name`.
    pub(crate) fn request(
        name: impl Into<String>,
        method: &'static str,
        params: &impl serde::Serialize,
        deadline: Instant,
        timeout: Duration,
    ) -> ToolCall {
        ToolCall::framed(name, method, Params::new(method, params), deadline, timeout)
    }

    fn framed(
        name: impl Into<String>,
        method: &'static str,
        params: Params,
        deadline: Instant,
        timeout: Duration,
    ) -> ToolCall {
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

/// Arguments from about this size (as JSON text) are written by
/// `write_json`, which copies strings in runs where serde_json looks each
/// byte up in its escape table (a 10 MB argument: about 4 ms against 13),
/// into a line sized once for them instead of grown by doubling. Below
/// it, serde_json's own writer: a small call is not worth the estimate.
const LARGE_ARGUMENTS: usize = 16 * 1024;

/// A `tools/call`'s params: `{"name":…,"arguments":…,"_meta":…}`, `_meta`
/// left out when empty.
fn by_serde(tool: &str, arguments: &Map<String, Value>, meta: &Map<String, Value>) -> Params {
    #[derive(serde::Serialize)]
    struct Params<'a> {
        name: &'a str,
        arguments: &'a Map<String, Value>,
        #[serde(rename = "_meta", skip_serializing_if = "Map::is_empty")]
        meta: &'a Map<String, Value>,
    }
    super::Params::new("tools/call", &Params { name: tool, arguments, meta })
}

/// [`by_serde`]'s text, byte for byte, for large arguments (about
/// `arguments_len` bytes).
fn by_write_json(
    tool: &str,
    arguments: &Map<String, Value>,
    meta: &Map<String, Value>,
    arguments_len: usize,
) -> Params {
    // The line's head and tail, the name's quotes and escapes, the keys.
    let capacity = arguments_len + members_len_hint(meta) + tool.len() * 2 + 128;
    Params::written("tools/call", capacity, |line| {
        line.extend_from_slice(br#"{"name":"#);
        write_json_string(line, tool);
        line.extend_from_slice(br#","arguments":"#);
        write_json_object(line, arguments);
        if !meta.is_empty() {
            line.extend_from_slice(br#","_meta":"#);
            write_json_object(line, meta);
        }
        line.push(b'}');
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};

    use super::{by_serde, by_write_json};

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn large_arguments_are_written_as_serde_writes_them() {
        // Dense in escapes: every kind, the estimate's eighth exceeded.
        let text = "plain text, then \"quoted\", a \\ and a tab\t, ☃ and \u{1}\n".repeat(2000);
        let arguments = object(json!({"content": text, "path": "/tmp/x", "n": 1.5, "list": [true, null, "a\"b"]}));
        let meta = object(json!({"traceparent": "00-a-b-01", "progressToken": 7}));
        for (tool, meta) in [("write_file", meta), ("we\"ird ☃", Map::new())] {
            let written = by_write_json(tool, &arguments, &meta, warden_protocol::members_len_hint(&arguments));
            assert_eq!(written.get(), by_serde(tool, &arguments, &meta).get());
        }
    }

    #[test]
    fn a_line_for_large_arguments_is_sized_once() {
        let text = "A line of a file, with a \"quote\" now and then.\n".repeat(4000);
        let arguments = object(json!({"path": "/tmp/x", "content": text}));
        let hint = warden_protocol::members_len_hint(&arguments);
        let line = by_write_json("write_file", &arguments, &Map::new(), hint).into_line(9);
        assert_eq!(line.capacity(), hint + 2 + "write_file".len() * 2 + 128, "never grown while written");
        assert!(line.capacity() > line.len(), "room is left for the newline");
    }
}
