use serde_json::json;

use super::*;

#[test]
fn sorts_requests_notifications_and_responses() {
    let request = Message::parse(r#"{"jsonrpc":"2.0","id":"a-1","method":"ping"}"#).unwrap();
    assert_eq!(request, Message::request(RequestId::String("a-1".into()), "ping", None));

    let notification = Message::parse(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#).unwrap();
    assert_eq!(notification.method(), Some("notifications/tools/list_changed"));
    assert!(matches!(notification, Message::Notification(_)));

    let response = Message::parse(r#"{"jsonrpc":"2.0","id":7,"result":null}"#).unwrap();
    assert_eq!(response, Message::result(RequestId::Number(7), Value::Null));

    let error = Message::parse(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}"#).unwrap();
    assert_eq!(error, Message::error(RequestId::Number(7), ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "nope")));
}

#[test]
fn round_trips_with_the_version_member() {
    let message = Message::request(RequestId::Number(3), "tools/list", Some(json!({"cursor": "x"})));
    let text = message.to_json();
    assert_eq!(text, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x"}}"#);
    assert_eq!(Message::parse(&text).unwrap(), message);
}

#[test]
fn says_what_is_wrong_with_bad_lines() {
    let cases = [
        ("this is not json", "not JSON"),
        ("[1,2]", "expected a JSON object, found an array"),
        (r#"{"hello":"world"}"#, "no \"jsonrpc\": \"2.0\" member"),
        (r#"{"jsonrpc":"1.0","method":"x"}"#, "expected \"2.0\""),
        (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#, "\"id\" must be a string or an integer"),
        (r#"{"jsonrpc":"2.0","id":1}"#, "neither \"method\", \"result\" nor \"error\""),
        (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#, "malformed \"error\" member"),
    ];
    for (line, expected) in cases {
        let error = Message::parse(line).unwrap_err().to_string();
        assert!(error.contains(expected), "{line}: {error}");
    }
}

#[test]
fn an_error_with_a_null_id_is_still_a_response() {
    let message =
        Message::parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#).unwrap();
    let Message::Response(response) = message else { panic!("not a response") };
    assert_eq!(response.id, None);
    assert_eq!(response.outcome.unwrap_err().code, ErrorCode::PARSE_ERROR);
}

#[test]
fn a_raw_response_is_what_the_full_parse_reads_as_a_successful_response() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        r#"{"id":"a-1","result":[1, 2.5, "x"],"jsonrpc":"2.0","extra":true}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":{}}"#,
        // Everything from here on is left to `Message::parse`.
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
        r#"{"jsonrpc":"2.0","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{},"error":null}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        r#"{"jsonrpc":"1.0","id":7,"result":{}}"#,
        r#"{"jsonrpc":"2.\u0030","id":7,"result":{}}"#,
        r#"{"id":7,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{},"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"result":{}} trailing"#,
        "not json",
    ];
    for line in lines {
        // Whatever the fast path takes, the full parse reads the same way.
        // What it leaves (an escaped "2.0", say) the full parse may still
        // accept.
        if let Some(raw) = RawResponse::parse(line) {
            let result: Value = serde_json::from_str(raw.result.get()).unwrap();
            assert_eq!(Message::parse(line).unwrap(), Message::result(raw.id, result), "{line}");
        }
    }
    for line in &lines[..4] {
        assert!(RawResponse::parse(line).is_some(), "{line} takes the fast path");
    }
    for line in &lines[4..] {
        assert!(RawResponse::parse(line).is_none(), "{line} is left to the full parse");
    }
    assert_eq!(RawResponse::parse(lines[0]).unwrap().result.get(), r#"{"content":[{"type":"text","text":"hi"}]}"#);
}

#[test]
fn a_raw_result_is_checked_as_json_but_not_decoded() {
    // Decoding refuses a lone surrogate; the fast path leaves that to
    // whoever decodes the result.
    let line = r#"{"jsonrpc":"2.0","id":7,"result":{"text":"\ud800"}}"#;
    assert!(Message::parse(line).is_err());
    let raw = RawResponse::parse(line).unwrap();
    assert!(serde_json::from_str::<Value>(raw.result.get()).is_err());
}

#[test]
fn a_request_id_is_a_string_or_an_integer_whatever_it_is_read_from() {
    let cases = [
        ("5", Some(RequestId::Number(5))),
        ("-5", Some(RequestId::Number(-5))),
        ("9223372036854775807", Some(RequestId::Number(i64::MAX))),
        (r#""a-1""#, Some(RequestId::String("a-1".into()))),
        (r#""a\"b""#, Some(RequestId::String("a\"b".into()))),
        ("9223372036854775808", None),
        ("1.5", None),
        ("true", None),
        ("null", None),
        ("[1]", None),
        ("{}", None),
    ];
    for (text, id) in cases {
        let from_text = serde_json::from_str::<RequestId>(text).ok();
        let from_value = serde_json::from_value::<RequestId>(serde_json::from_str(text).unwrap()).ok();
        assert_eq!(from_text, id, "{text}");
        assert_eq!(from_value, id, "{text}");
    }
    let error = serde_json::from_str::<RequestId>("1.5").unwrap_err().to_string();
    assert!(error.contains("expected a request id (a string or an integer)"), "{error}");
}
