use serde::Deserialize;
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

/// `ContentBlock` as it was derived before it got its own `Deserialize`.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(untagged)]
enum DerivedBlock {
    Text {
        #[serde(rename = "type")]
        kind: TextTag,
        text: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Other(Map<String, Value>),
}

impl From<DerivedBlock> for ContentBlock {
    fn from(block: DerivedBlock) -> Self {
        match block {
            DerivedBlock::Text { kind, text, extra } => ContentBlock::Text { kind, text, extra },
            DerivedBlock::Other(map) => ContentBlock::Other(map),
        }
    }
}

#[test]
fn a_content_block_reads_as_the_untagged_derive_did() {
    let cases = [
        r#"{"type":"text","text":"hi"}"#,
        r#"{"text":"hi","type":"text","annotations":{"audience":["user"]},"_meta":{"a":1}}"#,
        r#"{"type":"image","data":"AAAA","mimeType":"image/png"}"#,
        r#"{"type":"text"}"#,
        r#"{"text":"no type"}"#,
        r#"{"type":"text","text":5}"#,
        r#"{"type":"text","text":null}"#,
        r#"{"type":"Text","text":"x"}"#,
        r#"{"type":{"text":null},"text":"x"}"#,
        r#"{"type":{"text":1},"text":"x"}"#,
        r#"{"type":["text"],"text":"x"}"#,
        r#"{"type":5,"text":"x"}"#,
        r#"{"type":-5,"text":"x"}"#,
        r#"{"type":1.5,"text":"x"}"#,
        r#"{"type":true,"text":"x"}"#,
        r#"{"type":null,"text":"x"}"#,
        r#"{"type":"text","text":"a","text":"b"}"#,
        r#"{"type":"text","type":"text","text":"a"}"#,
        r#"{"type":"text","text":"a","x":1,"x":2}"#,
        r#"{"type":"te\u0078t","te\u0078t":"escaped"}"#,
        r#"{}"#,
        r#""text""#,
        r#"3"#,
        r#"null"#,
        r#"[1,2]"#,
        r#"true"#,
    ];
    for case in cases {
        let message = |error: serde_json::Error| error.to_string().replace("DerivedBlock", "ContentBlock");
        let derived = serde_json::from_str::<DerivedBlock>(case).map(ContentBlock::from).map_err(message);
        let block = serde_json::from_str::<ContentBlock>(case).map_err(|e| e.to_string());
        assert_eq!(block, derived, "from text: {case}");
        let value: Value = serde_json::from_str(case).unwrap();
        let derived = serde_json::from_value::<DerivedBlock>(value.clone()).map(ContentBlock::from).map_err(message);
        let block = serde_json::from_value::<ContentBlock>(value).map_err(|e| e.to_string());
        assert_eq!(block, derived, "from a value: {case}");
        // In a list, where serde_json adds the position to the error.
        let list = format!(r#"[{{"type":"text","text":"first"}}, {case}]"#);
        let derived = serde_json::from_str::<Vec<DerivedBlock>>(&list)
            .map(|blocks| blocks.into_iter().map(ContentBlock::from).collect())
            .map_err(message);
        let blocks = serde_json::from_str::<Vec<ContentBlock>>(&list).map_err(|e| e.to_string());
        assert_eq!(blocks, derived, "in a list: {case}");
    }
}

/// `CallToolResult` as it was derived before it got its own `Deserialize`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DerivedResult {
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    structured_content: Option<Value>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl From<DerivedResult> for CallToolResult {
    fn from(result: DerivedResult) -> Self {
        let DerivedResult { content, structured_content, is_error, extra } = result;
        CallToolResult { content, structured_content, is_error, extra }
    }
}

/// Call results as servers might send them, well formed or not.
const RESULT_CASES: [&str; 21] = [
    r#"{"content":[{"type":"text","text":"hi"}]}"#,
    r#"{"content":[{"type":"text","text":"hi"}],"isError":true,"structuredContent":{"a":[1,2.5,-3]}}"#,
    r#"{"_meta":{"k":"v"},"content":[],"future":null,"isError":false}"#,
    r#"{}"#,
    r#"{"isError":null,"structuredContent":null}"#,
    r#"{"content":"not a list"}"#,
    r#"{"content":null}"#,
    r#"{"content":[5]}"#,
    r#"{"content":[],"content":[]}"#,
    r#"{"isError":true,"isError":false}"#,
    r#"{"structuredContent":1,"structuredContent":2}"#,
    r#"{"isError":"yes"}"#,
    r#"{"x":1,"x":2,"y":{"z":[true]}}"#,
    r#"{"c\u006fntent":[{"type":"text","text":"escaped"}],"is\u0045rror":true}"#,
    r#"{"Content":[]}"#,
    r#"[]"#,
    r#"[{"type":"text","text":"hi"}]"#,
    r#""text""#,
    r#"5"#,
    r#"null"#,
    r#"true"#,
];

#[test]
fn a_call_result_reads_as_the_flattening_derive_did() {
    let cases = RESULT_CASES;
    for case in cases {
        let message = |error: serde_json::Error| error.to_string().replace("DerivedResult", "CallToolResult");
        let derived = serde_json::from_str::<DerivedResult>(case).map(CallToolResult::from).map_err(message);
        let result = serde_json::from_str::<CallToolResult>(case).map_err(|e| e.to_string());
        assert_eq!(result, derived, "from text: {case}");
        let value: Value = serde_json::from_str(case).unwrap();
        let derived = serde_json::from_value::<DerivedResult>(value.clone()).map(CallToolResult::from).map_err(message);
        let result = serde_json::from_value::<CallToolResult>(value).map_err(|e| e.to_string());
        assert_eq!(result, derived, "from a value: {case}");
        // Inside an answer, where serde_json adds the position to the error.
        let answer = format!(r#"{{"id":1,"result":{case}}}"#);
        #[derive(Debug, Deserialize)]
        struct Derived {
            result: DerivedResult,
        }
        #[derive(Debug, Deserialize)]
        struct Read {
            result: CallToolResult,
        }
        let derived = serde_json::from_str::<Derived>(&answer).map(|a| CallToolResult::from(a.result)).map_err(message);
        let result = serde_json::from_str::<Read>(&answer).map(|a| a.result).map_err(|e| e.to_string());
        assert_eq!(result, derived, "in an answer: {case}");
    }
}

#[test]
fn a_call_result_becomes_the_value_it_serialises_as() {
    let mut read = 0;
    for case in RESULT_CASES {
        let Ok(result) = serde_json::from_str::<CallToolResult>(case) else { continue };
        read += 1;
        // Compared as text: equal values could still differ in key order.
        let copied = serde_json::to_value(&result).unwrap().to_string();
        assert_eq!(Value::from(result).to_string(), copied, "{case}");
    }
    let odd = CallToolResult {
        content: vec![ContentBlock::Text {
            kind: TextTag::Text,
            text: "t".into(),
            extra: Map::from_iter([
                ("text".to_string(), json!("shadow")),
                ("annotations".to_string(), json!({"a": 1})),
            ]),
        }],
        structured_content: Some(json!({"s": 1})),
        is_error: Some(false),
        extra: Map::from_iter([("isError".to_string(), json!(true)), ("_meta".to_string(), json!({}))]),
    };
    let copied = serde_json::to_value(&odd).unwrap().to_string();
    assert_eq!(Value::from(odd).to_string(), copied, "members named like fields");
    assert!(read >= 8, "the cases hold results that read ({read})");
}
