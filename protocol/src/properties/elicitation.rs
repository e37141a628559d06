//! Elicitation requests come from servers and answers from people: no
//! schema, request or answer makes the reader or the checker panic; a
//! form's checked answer checks again to itself (defaults already filled
//! in, values already of their kind); and every schema built of allowed
//! fields is accepted.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::config;
use crate::elicitation::{ElicitReply, ElicitRequest, FormSchema};

/// JSON a few levels deep, with the schema keywords more often than noise.
fn schemaish() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("string"),
            Just("number"),
            Just("integer"),
            Just("boolean"),
            Just("array"),
            Just("object"),
            Just("email"),
            Just("date"),
            Just("date-time"),
            Just("uri"),
            Just("https://x.example/a"),
            Just("2024-02-30"),
        ]
        .prop_map(|text| Value::String(text.into())),
        "[ -~]{0,8}".prop_map(Value::String),
    ];
    let key = prop_oneof![
        Just("type"),
        Just("properties"),
        Just("required"),
        Just("enum"),
        Just("oneOf"),
        Just("anyOf"),
        Just("const"),
        Just("title"),
        Just("items"),
        Just("default"),
        Just("format"),
        Just("minimum"),
        Just("maximum"),
        Just("minLength"),
        Just("maxLength"),
        Just("minItems"),
        Just("maxItems"),
        Just("enumNames"),
        Just("message"),
        Just("requestedSchema"),
        Just("mode"),
        Just("url"),
    ]
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A schema made only of allowed fields.
fn allowed_schema() -> impl Strategy<Value = Value> {
    let field = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "string", "format": "email", "default": "a@b.example"})),
        Just(json!({"type": "integer", "minimum": 1, "maximum": 9, "default": 3})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "boolean", "default": false})),
        Just(json!({"type": "string", "enum": ["a", "b"], "default": "a"})),
        Just(json!({"type": "string", "oneOf": [{"const": "x", "title": "X"}]})),
        Just(json!({"type": "array", "items": {"enum": ["p", "q"]}, "maxItems": 2, "default": ["p"]})),
    ];
    proptest::collection::btree_map("[a-z]{1,5}", field, 0..6).prop_map(|fields| {
        let properties: Map<String, Value> = fields.into_iter().collect();
        json!({"type": "object", "properties": properties})
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_request_or_answer_makes_a_panic(params in schemaish(), answer in schemaish()) {
        if let Ok(request) = ElicitRequest::parse(Some(&params)) {
            let content = answer.as_object().cloned();
            let _ = request.check(ElicitReply::Accept(content));
            let _ = request.to_params();
        }
        let _ = FormSchema::parse(&params);
        let _ = ElicitRequest::reply_of(&answer);
    }

    #[test]
    fn allowed_schemas_are_read_and_a_checked_answer_checks_to_itself(schema in allowed_schema(), answer in schemaish()) {
        let form = FormSchema::parse(&schema).expect("only allowed fields");
        if let Some(content) = answer.as_object() {
            if let Ok(checked) = form.check(content.clone()) {
                prop_assert_eq!(form.check(checked.clone()), Ok(checked));
            }
        }
        // Every field here has a default or is optional: defaults always do.
        prop_assert!(form.defaults().is_ok());
    }
}
