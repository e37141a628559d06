//! JSON-RPC and bridge decoding: no input makes them panic, the messages
//! Warden writes read back as they were, and what the answer scan takes
//! reads as the full parse reads it.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::config;
use crate::bridge::RequestLine;
use crate::jsonrpc::{answer_head, ErrorCode, ErrorObject, Message, RawResponse, RequestId};

/// JSON values a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![any::<i64>().prop_map(RequestId::Number), "[ -~]{0,10}".prop_map(RequestId::String)]
}

fn params() -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(
        proptest::collection::btree_map("[a-z_]{1,6}", json_value(), 0..4)
            .prop_map(|map| Value::Object(map.into_iter().collect())),
    )
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (request_id(), "[a-z/_]{1,20}", params()).prop_map(|(id, method, params)| Message::request(id, method, params)),
        ("[a-z/_]{1,20}", params()).prop_map(|(method, params)| Message::notification(method, params)),
        (request_id(), json_value()).prop_map(|(id, result)| Message::result(id, result)),
        (request_id(), any::<i32>(), "[ -~]{0,20}")
            .prop_map(|(id, code, text)| Message::error(id, ErrorObject::new(ErrorCode(code), text))),
    ]
}

/// A result object.
fn result_object() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map("[a-z_]{1,6}", json_value(), 0..4)
        .prop_map(|map| Value::Object(map.into_iter().collect()))
}

/// A successful answer as some server may write it: members in any order,
/// JSON whitespace anywhere it may go.
fn answer_line(id: i64, result: &Value, order: usize, space: &str) -> String {
    let mut members = vec![
        format!(r#""jsonrpc"{space}:{space}"2.0""#),
        format!(r#""id"{space}:{space}{id}"#),
        format!(r#""result"{space}:{space}{result}"#),
    ];
    members.rotate_left(order % 3);
    if order % 2 == 1 {
        members.swap(0, 1);
    }
    format!("{space}{{{space}{}{space}}}{space}", members.join(&format!("{space},{space}")))
}

/// Whatever `answer_head` finds in `line`, when its result reads as JSON,
/// the full parse reads the same: that id, that result.
fn agrees_with_the_full_parse(line: &str) -> Result<(), TestCaseError> {
    let Some(head) = answer_head(line) else { return Ok(()) };
    let Ok(result) = serde_json::from_str::<Value>(&line[head.result]) else { return Ok(()) };
    prop_assert_eq!(
        Message::parse(line).map_err(|error| TestCaseError::fail(format!("{error}: {line}")))?,
        Message::result(RequestId::Number(head.id), result)
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_text_makes_the_decoders_panic(text in "\\PC{0,200}") {
        let _ = Message::parse(&text);
        let _ = RawResponse::parse(&text);
        let _ = RequestLine::parse(&text);
    }

    #[test]
    fn no_json_makes_the_decoders_panic(value in json_value()) {
        let text = value.to_string();
        let _ = Message::parse(&text);
        let _ = RawResponse::parse(&text);
        if let Ok(line) = RequestLine::parse(&text) {
            let _ = line.into_request();
        }
    }

    #[test]
    fn every_message_reads_back_as_it_was_written(message in message()) {
        let text = message.to_json();
        prop_assert_eq!(Message::parse(&text).expect("Warden's own JSON parses"), message);
    }

    #[test]
    fn every_plain_answer_is_found_in_any_member_order(
        id in 0..=i64::MAX,
        result in result_object(),
        order in 0..6usize,
        space in prop_oneof![Just(""), Just(" "), Just("\t"), Just("\r\n  ")],
    ) {
        let line = answer_line(id, &result, order, space);
        let head = answer_head(&line).expect("a plain answer is found");
        prop_assert_eq!(head.id, id);
        prop_assert_eq!(serde_json::from_str::<Value>(&line[head.result]).unwrap(), result);
    }

    #[test]
    fn what_the_answer_scan_takes_reads_as_the_full_parse_reads_it(
        id in 0..=i64::MAX,
        result in result_object(),
        order in 0..6usize,
        at in any::<prop::sample::Index>(),
        cut in any::<bool>(),
        put in prop::sample::select(&["\"", "\\", "{", "}", "[", "]", ",", ":", " ", "0", "-", ".", "e", "x", "\"id\":1,"][..]),
    ) {
        let mut line = answer_line(id, &result, order, "");
        let at = at.index(line.len() + 1);
        if cut && at < line.len() {
            line.remove(at);
        } else {
            line.insert_str(at, put);
        }
        agrees_with_the_full_parse(&line)?;
    }

    #[test]
    fn no_text_fools_the_answer_scan(text in "\\PC{0,200}") {
        agrees_with_the_full_parse(&text)?;
    }
}
