use serde_json::json;

use super::*;

fn request(line: &str) -> Result<Request, BridgeError> {
    RequestLine::parse(line).map_err(|(_, error)| error)?.into_request()
}

#[test]
fn the_seed_ops_keep_their_shapes() {
    assert_eq!(
        request(r#"{"op":"list_tools"}"#).unwrap(),
        Request::ListTools { settle: false, agent: None, profile: None }
    );
    assert_eq!(
        request(r#"{"op":"call_tool","server":"serena","tool":"find_symbol","args":{"q":"x"}}"#).unwrap(),
        Request::CallTool(CallToolOp {
            server: Some("serena".into()),
            tool: Some("find_symbol".into()),
            name: None,
            args: Some(json!({"q": "x"})),
            format: ResultFormat::Raw,
            agent: None,
            notices: false,
        })
    );
    assert_eq!(
        request(r#"{"op":"get_schema","server":"serena","tool":"find_symbol"}"#).unwrap(),
        Request::GetSchema { server: "serena".into(), tool: "find_symbol".into() }
    );
}

#[test]
fn the_envelope_is_read_before_the_op() {
    let line = RequestLine::parse(r#"{"op":"no_such_op","token":"abc","id":[1,"x"]}"#).unwrap();
    assert_eq!(line.token.as_deref(), Some("abc"));
    assert_eq!(line.id, Some(json!([1, "x"])));
    let error = line.into_request().unwrap_err();
    assert_eq!(error.code, BridgeErrorCode::UNKNOWN_OP);
    assert!(error.message.starts_with("unknown op 'no_such_op'; the operations are: ping, status, list_tools"));

    // A token that is not a string counts as no token.
    assert_eq!(RequestLine::parse(r#"{"op":"ping","token":5}"#).unwrap().token, None);
}

#[test]
fn malformed_requests_get_codes_that_say_what_is_wrong() {
    let cases = [
        ("{not json", BridgeErrorCode::PARSE_ERROR, "the request is not JSON: key must be a string"),
        ("[1,2]", BridgeErrorCode::INVALID_REQUEST, "a request is a JSON object with an `op`, not an array"),
        (r#"{"token":"t"}"#, BridgeErrorCode::INVALID_REQUEST, "the request has no `op`"),
        (r#"{"op":7}"#, BridgeErrorCode::INVALID_REQUEST, "`op` must be a string, not a number"),
        (
            r#"{"op":"get_schema","server":1,"tool":"x"}"#,
            BridgeErrorCode::INVALID_REQUEST,
            "op 'get_schema': invalid type: integer `1`, expected a string",
        ),
        (
            r#"{"op":"get_schema","server":"s"}"#,
            BridgeErrorCode::INVALID_REQUEST,
            "op 'get_schema': missing field `tool`",
        ),
        (r#"{"op":"ping","arg":1}"#, BridgeErrorCode::INVALID_REQUEST, "op 'ping': unknown field `arg`"),
        (
            r#"{"op":"call_tool","name":"a__b","args":[1]}"#,
            BridgeErrorCode::INVALID_REQUEST,
            "op 'call_tool': `args` must be a JSON object, not an array",
        ),
        (
            r#"{"op":"call_tool","name":"a__b","server":"a"}"#,
            BridgeErrorCode::INVALID_REQUEST,
            "op 'call_tool': name the tool either with `server` and `tool`, or with `name`",
        ),
        (
            r#"{"op":"call_tool","tool":"b"}"#,
            BridgeErrorCode::INVALID_REQUEST,
            "op 'call_tool': name the tool either with `server` and `tool`, or with `name`",
        ),
        (
            r#"{"op":"call_tool","name":"a__b","format":"html"}"#,
            BridgeErrorCode::INVALID_REQUEST,
            "unknown variant `html`",
        ),
    ];
    for (line, code, start) in cases {
        let error = request(line).unwrap_err();
        assert_eq!(error.code, code, "{line}: {error:?}");
        assert!(error.message.starts_with(start) || error.message.contains(start), "{line}: {}", error.message);
    }
}

#[test]
fn calls_by_namespaced_name_and_text_results() {
    assert_eq!(
        request(r#"{"op":"call_tool","name":"git__status","format":"text","agent":"coder"}"#).unwrap(),
        Request::CallTool(CallToolOp {
            server: None,
            tool: None,
            name: Some("git__status".into()),
            args: None,
            format: ResultFormat::Text,
            agent: Some("coder".into()),
            notices: false,
        })
    );
    assert_eq!(
        request(r#"{"op":"deny","approval":"a1","reason":"no"}"#).unwrap(),
        Request::Deny { approval: "a1".into(), reason: Some("no".into()) }
    );
    assert_eq!(request(r#"{"op":"status","settle":true}"#).unwrap(), Request::Status { settle: true });
}

#[test]
fn every_listed_op_decodes() {
    for op in Request::OPS {
        let line = match *op {
            "get_schema" => json!({"op": op, "server": "s", "tool": "t"}),
            "describe_tool" => json!({"op": op, "name": "s__t"}),
            "find_tools" => json!({"op": op, "query": "read a file"}),
            "call_tool" => json!({"op": op, "name": "s__t"}),
            "approve" | "deny" => json!({"op": op, "approval": "a"}),
            "answer" => json!({"op": op, "question": "4", "action": "decline"}),
            "reconnect" => json!({"op": op, "server": "s"}),
            "cancel" => json!({"op": op, "request": 7}),
            "fetch_task" => json!({"op": op, "key": "123-4"}),
            _ => json!({"op": op}),
        };
        request(&line.to_string()).unwrap_or_else(|error| panic!("{op}: {error}"));
    }
}

#[test]
fn answers_round_trip_with_their_id() {
    let id = json!(7);
    let result = serde_json::value::to_raw_value(&json!({"pong": true})).unwrap();
    let line = ResponseLine { ok: true, id: Some(&id), result: Some(&*result), error: None }.to_line();
    assert_eq!(line, "{\"ok\":true,\"id\":7,\"result\":{\"pong\":true}}\n");
    let answer = Response::parse(&line).unwrap();
    assert_eq!(answer.id, Some(id));
    assert_eq!(answer.into_result().unwrap().get(), r#"{"pong":true}"#);

    let error = BridgeError::new(BridgeErrorCode::NOT_AVAILABLE, "approvals arrive with the policy layer");
    let line = ResponseLine { ok: false, id: None, result: None, error: Some(&error) }.to_line();
    assert_eq!(
        line,
        "{\"ok\":false,\"error\":{\"code\":\"not_available\",\"message\":\"approvals arrive with the policy layer\"}}\n"
    );
    assert_eq!(Response::parse(&line).unwrap().into_result().unwrap_err(), error);
}

#[test]
fn a_tool_result_is_written_into_a_line_sized_for_it_up_front() {
    use crate::{CallToolResult, ContentBlock};
    let prose = "A line of \"quoted\" text,\twith a tab and a newline.\n".repeat(20_000);
    let image = json!({"type": "image", "data": "iVBORw0KGgo".repeat(50_000), "mimeType": "image/png"});
    let ContentBlock::Text { extra, .. } =
        serde_json::from_value(json!({"type": "text", "text": "", "_meta": {"k": 1}})).unwrap()
    else {
        panic!("a text block")
    };
    let results = [
        CallToolResult::success("x".repeat(1 << 20)),
        CallToolResult::success(prose.clone()),
        CallToolResult {
            content: vec![
                ContentBlock::Text { kind: crate::mcp::TextTag::Text, text: prose.clone(), extra },
                serde_json::from_value(image).unwrap(),
            ],
            structured_content: Some(json!({"rows": vec![json!({"name": "a\"b", "n": 1.5}); 5_000]})),
            ..CallToolResult::error("")
        },
        CallToolResult::success(""),
    ];
    let id = json!(7);
    for result in &results {
        let hint = result.json_len_hint();
        let line = ResponseLine { ok: true, id: Some(&id), result: Some(result), error: None }.to_line_sized(hint);
        // Never grown: a buffer that doubles holds its old and new capacity
        // at once; and not much larger than it needs.
        assert_eq!(line.capacity(), hint + 256, "grown past the hint for {} bytes", line.len());
        assert!(hint <= line.len() * 5 / 4 + 512, "hint {hint} for a line of {}", line.len());
        let answer = Response::parse(&line).unwrap();
        assert_eq!(&serde_json::from_str::<CallToolResult>(answer.into_result().unwrap().get()).unwrap(), result);
    }
}

#[test]
fn a_value_line_is_the_text_serde_writes_in_a_buffer_sized_for_it() {
    use crate::CallToolResult;
    let prose = "A line of \"quoted\" text,\twith a tab and a newline.\n".repeat(20_000);
    let error = BridgeError::new(BridgeErrorCode::NOT_AVAILABLE, "no \"such\" thing\n");
    let results = [
        Value::from(CallToolResult::success("x".repeat(1 << 20))),
        Value::from(CallToolResult::success(prose)),
        json!({"text": "rendered ☃\u{1}\u{7f}", "is_error": false, "n": [1.5, -2, null]}),
        json!({}),
    ];
    let ids = [None, Some(json!(7)), Some(json!("a\"b")), Some(json!({"k": [1]}))];
    for (result, id) in results.iter().zip(&ids) {
        for (ok, result, error) in [(true, Some(result), None), (false, None, Some(&error))] {
            let line = ResponseLine { ok, id: id.as_ref(), result, error };
            let written = line.to_value_line();
            assert_eq!(written, line.to_line_sized(0), "the same text as serde's");
            // Never grown: a buffer that doubles holds its old and new
            // capacity at once.
            let reserved = result.map_or(0, crate::json_len_hint) + 256;
            assert_eq!(written.capacity(), reserved, "grown past the hint for {} bytes", written.len());
        }
    }
}

/// `call_tool` is read straight into its fields; every line, good or bad,
/// must come out as the whole enum's decoding makes it (or its error, word
/// for word), and go back on the wire as it came.
#[test]
fn call_tool_read_directly_is_what_the_enum_reads() {
    let lines = [
        r#"{"op":"call_tool","server":"s","tool":"t","args":{"q":[1,{"x":null}]},"format":"text","notices":true}"#,
        r#"{"op":"call_tool","name":"a__b","agent":"coder","args":null}"#,
        r#"{"op":"call_tool","name":"a__b","arg":{}}"#,
        r#"{"op":"call_tool","name":7}"#,
        r#"{"op":"call_tool","name":"a__b","notices":"yes"}"#,
        r#"{"op":"call_tool","name":"a__b","format":"html"}"#,
    ];
    for line in lines {
        let mut body: Map<String, Value> = serde_json::from_str(line).unwrap();
        let by_enum = serde_json::from_value::<Request>(Value::Object(body.clone()))
            .map_err(|error| format!("op 'call_tool': {error}"));
        let direct = request(line).map_err(|error| error.message);
        assert_eq!(direct, by_enum, "{line}");
        if let Ok(request) = direct {
            body.retain(|_, value| !value.is_null());
            let mut sent = serde_json::to_value(&request).unwrap();
            sent.as_object_mut().unwrap().retain(|_, value| !value.is_null());
            for (key, value) in &body {
                assert_eq!(sent.get(key), Some(value), "{line}: `{key}` on the wire");
            }
        }
    }
}
