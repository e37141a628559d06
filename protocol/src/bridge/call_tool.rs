//! The fields of `call_tool`, the operation nearly every request line is.
//!
//! A struct of their own, so that `RequestLine::into_request` can read a
//! `call_tool` straight into them: decoding the whole `Request` (an
//! internally tagged enum) first copies every key and value of the line,
//! the call's arguments too, into serde's own buffer to find the tag.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ResultFormat;

/// `call_tool`: runs a tool, named either by `server` + `tool` or by `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallToolOp {
    /// The server (with `tool`).
    #[serde(default)]
    pub server: Option<String>,
    /// The server's name for the tool (with `server`).
    #[serde(default)]
    pub tool: Option<String>,
    /// The namespaced name, instead of `server` + `tool`.
    #[serde(default)]
    pub name: Option<String>,
    /// The arguments: a JSON object (absent or null for none).
    #[serde(default)]
    pub args: Option<Value>,
    /// `raw` (default): the MCP result. `text`: the text a model should
    /// read, as `{"text", "is_error"}`.
    #[serde(default)]
    pub format: ResultFormat,
    /// The agent the call is made for: its `allowed_tools` apply.
    /// Absent: the host's own call.
    #[serde(default)]
    pub agent: Option<String>,
    /// Send notice lines (`{"id", "notice"}`) before the answer when
    /// something about this call waits for a person (a server's
    /// question), so the caller can say so at once.
    #[serde(default)]
    pub notices: bool,
}
