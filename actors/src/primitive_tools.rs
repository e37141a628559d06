//! Primitive tools: a server's resources and prompts (MCP's other two
//! primitives), as tools a model can use.
//!
//! Models call tools; MCP servers also offer resources and prompts. A
//! server whose `initialize` answer claims `resources` gets
//! `<server>__list_resources` and `<server>__read_resource`; one that claims
//! `prompts` gets `<server>__list_prompts` and `<server>__get_prompt`. A
//! server that claims only tools gets none. They go through the Registry,
//! routing and retries like any tool (they are read-only, so a crash just
//! repeats them), and answer with text rendered by `warden_policy`, bounded
//! by the output limit.
//!
//! Nothing is cached: every call asks the server, so a resource or prompt
//! list that changed (`notifications/resources/list_changed`, ...) is
//! always seen as it is now.

use std::future::Future;

use serde_json::{json, Map, Value};
use warden_protocol::{CallToolResult, Tool, ToolAnnotations};

use crate::error::CallError;
use crate::server_settings::MAX_LIST_PAGES;

/// Which of the four tools Warden makes of a server's resources and
/// prompts a tool is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrimitiveTool {
    /// `resources/list` and `resources/templates/list`.
    ListResources,
    /// `resources/read`.
    ReadResource,
    /// `prompts/list`.
    ListPrompts,
    /// `prompts/get`.
    GetPrompt,
}

/// The primitive tools for a server with these capabilities.
pub(crate) fn primitive_tools(resources: bool, prompts: bool) -> Vec<(PrimitiveTool, Tool)> {
    let mut tools = Vec::new();
    if resources {
        tools.push((
            PrimitiveTool::ListResources,
            tool(
                PrimitiveTool::ListResources.tool_name(),
                "List the resources this server offers (URIs with name, description, MIME type and size) and its \
                 resource templates. Read one with read_resource.",
                json!({"type": "object", "properties": {}}),
            ),
        ));
        tools.push((
            PrimitiveTool::ReadResource,
            tool(
                PrimitiveTool::ReadResource.tool_name(),
                "Read one resource of this server by its URI (as list_resources shows it). Text comes back as it \
                 is; binary contents are summarised, not included.",
                json!({
                    "type": "object",
                    "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                    "required": ["uri"],
                }),
            ),
        ));
    }
    if prompts {
        tools.push((
            PrimitiveTool::ListPrompts,
            tool(
                PrimitiveTool::ListPrompts.tool_name(),
                "List the prompt templates this server offers, with their arguments (required ones marked *). \
                 Render one with get_prompt.",
                json!({"type": "object", "properties": {}}),
            ),
        ));
        tools.push((
            PrimitiveTool::GetPrompt,
            tool(
                PrimitiveTool::GetPrompt.tool_name(),
                "Render one of this server's prompt templates with arguments; each message comes back as \
                 [role] body.",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The prompt's name, as list_prompts shows it."},
                        "arguments": {
                            "type": "object",
                            "description": "The prompt's arguments, by name.",
                            "additionalProperties": {"type": "string"},
                        },
                    },
                    "required": ["name"],
                }),
            ),
        ));
    }
    tools
}

fn tool(name: &str, description: &str, input_schema: Value) -> Tool {
    let annotations = ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    };
    Tool {
        name: name.to_string(),
        title: None,
        description: Some(description.to_string()),
        input_schema,
        output_schema: None,
        annotations: Some(annotations),
        extra: Map::new(),
    }
}

/// Runs `wrapper` with `arguments`, making its requests through `request`
/// (method, params → the server's result), and renders the answer as text
/// of at most `limit` bytes.
///
/// What the server refuses (an unknown URI, a missing prompt argument) is a
/// tool error the model can read and act on, like a tool's own failure, not
/// an error for the host: the wrapper did its job and the server said no.
pub(crate) async fn run<F, Fut>(
    wrapper: PrimitiveTool,
    arguments: &Map<String, Value>,
    limit: usize,
    request: F,
) -> Result<CallToolResult, CallError>
where
    F: Fn(&'static str, Value) -> Fut,
    Fut: Future<Output = Result<Value, CallError>>,
{
    match render(wrapper, arguments, request).await {
        Ok(Ok(text)) => Ok(text_result(warden_policy::truncate(text, limit), false)),
        Ok(Err(usage)) => Ok(usage_error(usage)),
        Err(CallError::Server { code, message, .. }) => {
            let text = format!("{} failed: {message} (JSON-RPC error {code})", wrapper.tool_name());
            Ok(text_result(warden_policy::truncate(text, limit), true))
        }
        Err(other) => Err(other),
    }
}

/// The wrapper's text, or (inner `Err`) why its arguments are unusable.
async fn render<F, Fut>(
    wrapper: PrimitiveTool,
    arguments: &Map<String, Value>,
    request: F,
) -> Result<Result<String, &'static str>, CallError>
where
    F: Fn(&'static str, Value) -> Fut,
    Fut: Future<Output = Result<Value, CallError>>,
{
    let text = match wrapper {
        PrimitiveTool::ListResources => {
            let (resources, capped) = list_all(&request, "resources/list", "resources").await?;
            let (templates, templates_capped) =
                list_all(&request, "resources/templates/list", "resourceTemplates").await.unwrap_or_default();
            let note = (capped || templates_capped).then(|| format!("listing stopped after {MAX_LIST_PAGES} pages"));
            warden_policy::render_resource_list(&resources, &templates, note.as_deref())
        }
        PrimitiveTool::ReadResource => {
            let Some(uri) = arguments.get("uri").and_then(Value::as_str) else {
                return Ok(Err("read_resource needs `uri`, the resource's URI as a string"));
            };
            let result = request("resources/read", json!({ "uri": uri })).await?;
            warden_policy::render_resource_read(&result)
        }
        PrimitiveTool::ListPrompts => {
            let (prompts, capped) = list_all(&request, "prompts/list", "prompts").await?;
            let mut text = warden_policy::render_prompt_list(&prompts);
            if capped {
                text.push_str(&format!("\nlisting stopped after {MAX_LIST_PAGES} pages"));
            }
            text
        }
        PrimitiveTool::GetPrompt => {
            let Some(name) = arguments.get("name").and_then(Value::as_str) else {
                return Ok(Err("get_prompt needs `name`, the prompt's name as a string"));
            };
            let mut params = json!({ "name": name });
            match arguments.get("arguments") {
                None | Some(Value::Null) => {}
                Some(Value::Object(values)) => {
                    // MCP prompt arguments are strings; say 3 for "3".
                    let values: Map<String, Value> = values
                        .iter()
                        .map(|(key, value)| match value {
                            Value::String(_) => (key.clone(), value.clone()),
                            other => (key.clone(), Value::String(other.to_string())),
                        })
                        .collect();
                    params["arguments"] = Value::Object(values);
                }
                Some(_) => return Ok(Err("get_prompt's `arguments` must be an object of strings")),
            }
            let result = request("prompts/get", params).await?;
            warden_policy::render_prompt(&result)
        }
    };
    Ok(Ok(text))
}

/// Follows `nextCursor` to the end (or `MAX_LIST_PAGES`), collecting `field`.
async fn list_all<F, Fut>(request: &F, method: &'static str, field: &str) -> Result<(Vec<Value>, bool), CallError>
where
    F: Fn(&'static str, Value) -> Fut,
    Fut: Future<Output = Result<Value, CallError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let mut page = request(method, params).await?;
        if let Some(Value::Array(found)) = page.get_mut(field).map(Value::take) {
            items.extend(found);
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => return Ok((items, false)),
        }
    }
    Ok((items, true))
}

impl PrimitiveTool {
    /// The tool's name within its server's namespace.
    pub fn tool_name(self) -> &'static str {
        match self {
            PrimitiveTool::ListResources => "list_resources",
            PrimitiveTool::ReadResource => "read_resource",
            PrimitiveTool::ListPrompts => "list_prompts",
            PrimitiveTool::GetPrompt => "get_prompt",
        }
    }
}

fn usage_error(text: &str) -> CallToolResult {
    CallToolResult::error(text)
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    if is_error {
        CallToolResult::error(text)
    } else {
        CallToolResult::success(text)
    }
}
