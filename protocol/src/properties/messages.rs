//! JSON-RPC and bridge decoding: no input makes them panic, and the
//! messages Warden writes read back as they were.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::config;
use crate::bridge::RequestLine;
use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RawResponse, RequestId};

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
}
