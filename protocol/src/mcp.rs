//! The MCP payloads Warden reads and writes.
//!
//! Warden sits between a host and servers it did not write, so these types
//! model what Warden acts on and carry everything else through untouched:
//! each struct has an `extra` map (`#[serde(flatten)]`) that keeps unknown
//! members, and [`ContentBlock::Other`] keeps content types that do not exist
//! yet. A host that reads a tool through Warden sees the server's `_meta`,
//! `outputSchema`, `icons` or next year's field exactly as the server sent it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json_len::{json_len_hint, members_len_hint, text_len_hint};

/// The protocol version Warden asks for.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every version Warden accepts in a server's `initialize` answer, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A client's or server's name and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Program name.
    pub name: String,
    /// Program version.
    #[serde(default)]
    pub version: String,
    /// Other members (`title`, `icons`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `initialize` request parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The newest version the client speaks.
    pub protocol_version: String,
    /// What the client offers the server (Warden offers nothing it cannot do).
    pub capabilities: Value,
    /// Who the client is.
    pub client_info: Implementation,
}

/// What a server says it can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Present when the server has tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Present when the server has resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Present when the server has prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Value>,
    /// Present when the server sends log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Other capabilities (`completions`, `experimental`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// What the server can do.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Who the server is.
    pub server_info: Implementation,
    /// Usage hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Behaviour hints a server attaches to a tool. Hints, not guarantees.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy things (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside the server's own world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Other hints.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool as a server lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The server's own name for it.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of its arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of its `structuredContent`, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Other members (`_meta`, `icons`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// `tools/list` request parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListToolsParams {
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One page of `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// Present when there are more pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tools/call` request parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The server's own name for the tool.
    pub name: String,
    /// The arguments: always a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Other members (`_meta` with a progress token, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a tool call produced. `is_error` marks a failure of the tool itself,
/// which is a normal result for the model to read, not a protocol error.
///
/// It reads through a hand-written [`Deserialize`] (in `reading`), as the
/// derive with `#[serde(flatten)]` did, in one pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The output, in order.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Machine-readable output matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// True when the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Other members (`_meta`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// A successful result of one text block.
    pub fn success(text: impl Into<String>) -> CallToolResult {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: None,
            is_error: None,
            extra: Map::new(),
        }
    }

    /// A failed result (`isError: true`) of one text block: what a model
    /// reads when a tool could not do its job.
    pub fn error(text: impl Into<String>) -> CallToolResult {
        CallToolResult { is_error: Some(true), ..CallToolResult::success(text) }
    }

    /// True when the tool reported a failure.
    pub fn is_error(&self) -> bool {
        self.is_error.unwrap_or(false)
    }

    /// About how long the result is as JSON text (see `json_len.rs`).
    pub fn json_len_hint(&self) -> usize {
        let blocks = self.content.iter().map(|block| match block {
            // `{"type":"text","text":…}` around the text.
            ContentBlock::Text { text, extra, .. } => 24 + text_len_hint(text) + members_len_hint(extra),
            ContentBlock::Other(members) => members_len_hint(members),
        });
        blocks.sum::<usize>()
            + self.structured_content.as_ref().map_or(0, json_len_hint)
            + members_len_hint(&self.extra)
            + 64
    }

    /// The text blocks joined with newlines (other blocks are left out).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// The result as a JSON value, its strings moved rather than copied: the
/// same value as `serde_json::to_value`, which copies every string — for a
/// 10 MB result, 10 MB more written into pages fresh from the kernel.
impl From<CallToolResult> for Value {
    fn from(result: CallToolResult) -> Value {
        let mut members = Map::new();
        members.insert("content".into(), Value::Array(result.content.into_iter().map(Value::from).collect()));
        if let Some(structured) = result.structured_content {
            members.insert("structuredContent".into(), structured);
        }
        if let Some(is_error) = result.is_error {
            members.insert("isError".into(), Value::Bool(is_error));
        }
        // As `#[serde(flatten)]` writes them: after the fields, a member
        // named like one of them replacing its value.
        members.extend(result.extra);
        Value::Object(members)
    }
}

/// A block as a JSON value, its strings moved (see `CallToolResult`'s).
impl From<ContentBlock> for Value {
    fn from(block: ContentBlock) -> Value {
        match block {
            ContentBlock::Text { text, extra, .. } => {
                let mut members = Map::new();
                members.insert("type".into(), Value::String("text".into()));
                members.insert("text".into(), Value::String(text));
                members.extend(extra);
                Value::Object(members)
            }
            ContentBlock::Other(members) => Value::Object(members),
        }
    }
}

/// One piece of tool output.
///
/// It serialises as an untagged enum and reads as one, but through a
/// hand-written [`Deserialize`]: the derived untagged one buffers every block
/// into serde's intermediate form and then tries each variant against it,
/// which was the largest part of decoding a call's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// Always `"text"`.
        #[serde(rename = "type")]
        kind: TextTag,
        /// The text.
        text: String,
        /// Other members (`annotations`, `_meta`).
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// Any other block (`image`, `audio`, `resource_link`, `resource`, or a
    /// type that does not exist yet), kept as the server sent it.
    Other(Map<String, Value>),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { kind: TextTag::Text, text: text.into(), extra: Map::new() }
    }

    /// The block's `type`.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Other(map) => map.get("type").and_then(Value::as_str).unwrap_or("unknown"),
        }
    }
}

/// The `type` tag of a text block; deserialising anything else fails, which
/// sends the block to [`ContentBlock::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TextTag {
    /// `"text"`.
    #[serde(rename = "text")]
    Text,
}

/// The contents of a resource, as embedded in a result or read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// Where it lives.
    pub uri: String,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Other members.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

mod reading;

#[cfg(test)]
mod tests;
