//! The front's request handling, property-tested (issue 19): whatever a
//! client sends — any method the front knows or not, any params, either
//! era's envelope, well formed or not — no session panics, a notification
//! or response is taken without an answer, and every request is answered
//! exactly once, with its own id, as a JSON-RPC result or error.
//!
//! Each case opens a fresh session (initialized or not) on one front over
//! an embedded Warden with no servers, so a call ends at the front's own
//! checks or at "unknown tool" and never waits on a server.
//! `PROPTEST_CASES` sets how many cases (default 2,000).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use warden_actors::Warden;

use super::session::{Received, Session};
use super::view::View;
use super::Front;

fn config() -> Config {
    config_of(2_000)
}

/// The front's property tests' settings: `PROPTEST_CASES` cases, else
/// `cases`; failures are reported, not saved to files.
pub(super) fn config_of(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(cases);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// One runtime and one front for every case.
fn front() -> &'static (tokio::runtime::Runtime, Arc<Front>) {
    static FRONT: OnceLock<(tokio::runtime::Runtime, Arc<Front>)> = OnceLock::new();
    FRONT.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let front = runtime.block_on(async { Front::new(Warden::builder().start().await.unwrap()) });
        (runtime, front)
    })
}

/// JSON values a few levels deep, with keys the front reads among them.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop_oneof![Just("2026-07-28"), Just("2025-11-25"), Just("debug"), Just("loud"), Just("warden://x/y")]
            .prop_map(|text| json!(text)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key(), inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Object keys: the ones the front looks for, and others.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![
            Just("name"),
            Just("arguments"),
            Just("uri"),
            Just("cursor"),
            Just("level"),
            Just("requestState"),
            Just("inputResponses"),
            Just("progressToken"),
            Just("ref"),
            Just("io.modelcontextprotocol/protocolVersion"),
            Just("io.modelcontextprotocol/clientCapabilities"),
            Just("io.modelcontextprotocol/clientInfo"),
            Just("io.modelcontextprotocol/logLevel"),
            Just("elicitation"),
            Just("roots"),
        ]
        .prop_map(str::to_string),
        "[a-z_]{1,8}",
    ]
}

/// Params: none, a value, or an object with a `_meta` that may carry an
/// envelope.
fn params() -> impl Strategy<Value = Option<Value>> {
    let meta = proptest::collection::btree_map(key(), json_value(), 0..5);
    let object = (proptest::collection::btree_map(key(), json_value(), 0..5), proptest::option::of(meta)).prop_map(
        |(fields, meta)| {
            let mut object: serde_json::Map<String, Value> = fields.into_iter().collect();
            if let Some(meta) = meta {
                object.insert("_meta".into(), Value::Object(meta.into_iter().collect()));
            }
            Value::Object(object)
        },
    );
    proptest::option::of(prop_oneof![object, json_value()])
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop_oneof![
            Just("initialize"),
            Just("ping"),
            Just("server/discover"),
            Just("tools/list"),
            Just("tools/call"),
            Just("resources/list"),
            Just("resources/templates/list"),
            Just("resources/read"),
            Just("resources/subscribe"),
            Just("resources/unsubscribe"),
            Just("prompts/list"),
            Just("prompts/get"),
            Just("completion/complete"),
            Just("logging/setLevel"),
            Just("notifications/cancelled"),
            Just("notifications/initialized"),
        ]
        .prop_map(str::to_string),
        "[a-z/_]{1,16}",
    ]
}

/// A message as a client might send it: a request (with an id of any
/// JSON kind), a notification, a response, or something else.
pub(super) fn message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![any::<i64>().prop_map(|n| json!(n)), "[ -~]{0,8}".prop_map(Value::String), json_value()];
    prop_oneof![
        4 => (id.clone(), method(), params()).prop_map(|(id, method, params)| {
            let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
            if let Some(params) = params {
                message["params"] = params;
            }
            message
        }),
        1 => (method(), params()).prop_map(|(method, params)| json!({"jsonrpc": "2.0", "method": method, "params": params})),
        1 => (id, json_value()).prop_map(|(id, result)| json!({"jsonrpc": "2.0", "id": id, "result": result})),
        1 => json_value(),
    ]
}

/// What a session makes of `message`, after an `initialize` when asked:
/// the answer, if one came, within 5 s.
fn answer_of(initialized: bool, message: Value) -> Option<Value> {
    let (runtime, front) = front();
    runtime.block_on(async {
        let view = View::of(&front.warden, None, None, false).unwrap();
        let session = Session::new(Arc::clone(front), view);
        let (outbox, _messages) = mpsc::channel(64);
        if initialized {
            let opening = json!({"jsonrpc": "2.0", "id": "open", "method": "initialize", "params":
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "prop", "version": "1"}}});
            let Received::Answered(_) = session.receive(opening, outbox.clone()) else { panic!("initialize answers") };
        }
        match session.receive(message, outbox) {
            Received::Accepted | Received::NotHere => None,
            Received::Answered(answer) => Some(answer),
            Received::Request(pending) => {
                tokio::time::timeout(Duration::from_secs(5), pending).await.expect("answered within 5 s")
            }
        }
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_request_is_answered_once_with_its_own_id_and_nothing_panics(
        initialized in any::<bool>(),
        message in message(),
    ) {
        let is_request = message.get("method").is_some_and(Value::is_string) && message.get("id").is_some();
        let id = message.get("id").cloned();
        let answer = answer_of(initialized, message.clone());
        if is_request {
            let answer = answer.unwrap_or_else(|| panic!("no answer to {message}"));
            prop_assert_eq!(&answer["jsonrpc"], "2.0");
            prop_assert!(answer.get("result").is_some() != answer.get("error").is_some(), "{}", answer);
            let valid_id = id.as_ref().is_some_and(|id| id.is_string() || id.is_i64() || id.is_u64());
            let expected = if valid_id { id.unwrap() } else { Value::Null };
            prop_assert_eq!(&answer["id"], &expected, "{}", answer);
            if let Some(error) = answer.get("error") {
                prop_assert!(error["code"].is_i64(), "{}", answer);
                prop_assert!(error["message"].as_str().is_some_and(|text| !text.is_empty()), "{}", answer);
            }
        } else if let Some(answer) = answer {
            // Only what is no message at all is answered (with an error).
            prop_assert!(answer.get("error").is_some(), "{} answered {}", message, answer);
        }
    }
}
