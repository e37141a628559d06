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
