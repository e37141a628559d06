//! Tool use in sampling (MCP 2025-11-25): a server offers the model tools
//! (`tools`, `toolChoice`), the model answers with `tool_use` blocks, and
//! the server sends the results back as `tool_result` blocks in the next
//! request. Mapped here to the chat-completions shapes: `tools` of type
//! `function`, `tool_choice`, an assistant message's `tool_calls`, and a
//! `tool` message per result. Only with `[sampling] tools = true`, which
//! says the endpoint can call tools (and tells servers `sampling.tools`).

use serde_json::{json, Map, Value};

/// `tools` and `toolChoice` as the endpoint's `tools` and `tool_choice`.
pub(super) fn tools_of(params: &Map<String, Value>, body: &mut Map<String, Value>) -> Result<(), String> {
    let Some(tools) = params.get("tools") else { return Ok(()) };
    let tools = tools.as_array().ok_or("`tools` must be a list of tools")?;
    let functions = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let name = tool.get("name").and_then(Value::as_str).ok_or(format!("tools[{index}] has no `name`"))?;
            let mut function = json!({"name": name, "parameters": tool.get("inputSchema").cloned().unwrap_or(json!({"type": "object"}))});
            if let Some(description) = tool.get("description").and_then(Value::as_str) {
                function["description"] = json!(description);
            }
            Ok(json!({"type": "function", "function": function}))
        })
        .collect::<Result<Vec<_>, String>>()?;
    body.insert("tools".into(), Value::Array(functions));
    if let Some(mode) = params.get("toolChoice").and_then(|choice| choice.get("mode")).and_then(Value::as_str) {
        match mode {
            "auto" | "required" | "none" => body.insert("tool_choice".into(), json!(mode)),
            other => return Err(format!("toolChoice.mode \"{other}\" is not auto, required or none")),
        };
    }
    Ok(())
}

/// A `tool_use` block as one of an assistant message's `tool_calls`.
pub(super) fn tool_call_of(block: &Value) -> Result<Value, String> {
    let id = block.get("id").and_then(Value::as_str).ok_or("a tool_use block needs an `id`")?;
    let name = block.get("name").and_then(Value::as_str).ok_or("a tool_use block needs a `name`")?;
    let input = block.get("input").cloned().unwrap_or(json!({}));
    Ok(json!({"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}))
}

/// A `tool_result` block as a `tool` message, its text blocks joined.
pub(super) fn tool_message_of(block: &Value, scrub: &dyn Fn(&str) -> String) -> Result<Value, String> {
    let id = block.get("toolUseId").and_then(Value::as_str).ok_or("a tool_result block needs a `toolUseId`")?;
    let texts: Vec<String> = block
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(Value::as_str).map(|text| scrub(text)))
        .collect();
    let mut text = texts.join("\n");
    if text.is_empty() {
        text = block.get("structuredContent").map(Value::to_string).unwrap_or_default();
    }
    Ok(json!({"role": "tool", "tool_call_id": id, "content": text}))
}

/// The model's `tool_calls` as `tool_use` blocks.
pub(super) fn tool_uses_of(message: &Value) -> Vec<Value> {
    message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|call| {
            let id = call.get("id").and_then(Value::as_str)?;
            let name = call.pointer("/function/name").and_then(Value::as_str)?;
            let arguments = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("{}");
            let input = serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({}));
            Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        })
        .collect()
}
