use serde_json::json;

use super::*;

#[test]
fn a_tool_keeps_every_member_it_does_not_model() {
    let raw = json!({
        "name": "add",
        "description": "Adds",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": true, "futureHint": 3},
        "_meta": {"vendor/x": 1},
        "icons": [{"src": "a.png"}]
    });
    let tool: Tool = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(tool.annotations.as_ref().unwrap().read_only_hint, Some(true));
    assert_eq!(serde_json::to_value(&tool).unwrap(), raw);
}

#[test]
fn a_call_result_keeps_unknown_blocks_and_structured_content() {
    let raw = json!({
        "content": [
            {"type": "text", "text": "5", "annotations": {"audience": ["user"]}},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "hologram", "depth": 3}
        ],
        "structuredContent": {"sum": 5},
        "isError": false,
        "_meta": {"k": "v"}
    });
    let result: CallToolResult = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(result.text(), "5");
    assert_eq!(result.content[1].kind(), "image");
    assert_eq!(result.content[2].kind(), "hologram");
    assert!(!result.is_error());
    assert_eq!(serde_json::to_value(&result).unwrap(), raw);
}

#[test]
fn an_initialize_result_reads_capabilities() {
    let result: InitializeResult = serde_json::from_value(json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": true}, "completions": {}},
        "serverInfo": {"name": "s", "version": "1"}
    }))
    .unwrap();
    assert!(result.capabilities.tools.is_some());
    assert!(result.capabilities.resources.is_none());
    assert!(result.capabilities.extra.contains_key("completions"));
}
