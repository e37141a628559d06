//! Warden's one built-in tool, `describe_tool`, answered without a server.
//!
//! Models shown brief or summary definitions (tool profiles) call it to
//! fetch the full definition of a tool they may use. It is resolved before
//! any server is looked up, and honours the caller's allowlist: an agent
//! cannot learn about tools it may not call.

use serde_json::{json, Value};
use warden_protocol::CallToolResult;

use super::admit;
use crate::error::CallError;
use crate::policy_rules::PolicyRules;
use crate::registry::ToolEntry;

/// The name of Warden's built-in tool that returns the full definition of
/// any tool the caller may see (for models shown brief or summary
/// definitions).
pub const DESCRIBE_TOOL: &str = "describe_tool";

/// `describe_tool` itself, as a model is shown it.
pub(crate) fn definition() -> Value {
    json!({
        "name": DESCRIBE_TOOL,
        "description": "Returns the full definition (description and input schema) of a tool you can call. Use it before calling a tool whose parameters you were not shown.",
        "inputSchema": {
            "type": "object",
            "properties": { "tool": { "type": "string", "description": "The tool's name, as listed." } },
            "required": ["tool"]
        },
        "annotations": { "readOnlyHint": true }
    })
}

/// The full definition of `name` as its server listed it (with the
/// namespaced name), if `agent` may see it.
pub(crate) fn describe(
    tools: &[ToolEntry],
    rules: &PolicyRules,
    agent: Option<&str>,
    name: &str,
) -> Result<Value, CallError> {
    if name == DESCRIBE_TOOL {
        return Ok(definition());
    }
    admit::check_allowed(rules, agent, name)?;
    let entry = tools
        .iter()
        .find(|entry| entry.name == name)
        .ok_or_else(|| CallError::UnknownTool { name: name.to_string() })?;
    Ok(entry.definition())
}

/// Answers a call of [`DESCRIBE_TOOL`]: `{ "tool": "<name>" }`. Mistakes are
/// results the model reads (`isError`); only an unknown agent is an error.
pub(super) fn answer(
    tools: &[ToolEntry],
    rules: &PolicyRules,
    agent: Option<&str>,
    arguments: &Value,
) -> Result<CallToolResult, CallError> {
    let Some(name) = arguments.get("tool").and_then(Value::as_str) else {
        return Ok(CallToolResult::error(format!(
            "{DESCRIBE_TOOL} takes {{\"tool\": \"<name>\"}}, the name of a tool you can see"
        )));
    };
    match describe(tools, rules, agent, name) {
        Ok(definition) => {
            let text = serde_json::to_string_pretty(&definition).expect("a JSON value serialises");
            Ok(CallToolResult { structured_content: Some(definition), ..CallToolResult::success(text) })
        }
        Err(error @ CallError::UnknownAgent { .. }) => Err(error),
        Err(error) => Ok(CallToolResult::error(error.to_string())),
    }
}
