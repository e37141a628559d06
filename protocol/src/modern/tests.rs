use serde_json::json;

use super::*;

fn raw(value: Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(&value).unwrap()
}

fn error(code: i32, data: Option<Value>) -> ErrorObject {
    ErrorObject { code: ErrorCode(code), message: "no".into(), data }
}

#[test]
fn a_discovery_answer_naming_a_modern_version_is_a_modern_server() {
    let answer = raw(json!({
        "supportedVersions": ["2026-07-28", "2025-11-25"],
        "capabilities": {"tools": {"listChanged": true}},
        "instructions": "be kind",
        "_meta": {SERVER_INFO_KEY: {"name": "weather", "version": "1.2"}},
    }));
    let Verdict::Modern { version, result } = judge_discover(Ok(&answer)) else { panic!("not modern") };
    assert_eq!(version, "2026-07-28");
    let info = result.into_initialize_result(version);
    assert_eq!(info.server_info.name, "weather");
    assert_eq!(info.protocol_version, "2026-07-28");
    assert_eq!(info.instructions.as_deref(), Some("be kind"));
    assert!(info.capabilities.tools.is_some());
}

#[test]
fn anything_that_is_not_modern_evidence_falls_back_to_initialize() {
    let cases = [
        Err(error(-32601, None)),
        Err(error(-32602, None)),
        Err(error(-32022, None)),
        Err(error(-32022, Some(json!({"supported": ["2025-11-25", "2025-06-18"]})))),
        Ok(raw(json!({"supportedVersions": ["2025-11-25"]}))),
        Ok(raw(json!({"tools": []}))),
    ];
    for case in cases {
        let outcome = case.as_ref().map(|raw| raw.as_ref());
        assert!(matches!(judge_discover(outcome), Verdict::Legacy { .. }), "{case:?}");
    }
}

#[test]
fn an_unsupported_version_error_naming_a_mutual_one_asks_again_and_one_naming_none_is_incompatible() {
    let again = error(-32022, Some(json!({"supported": ["2027-01-01", "2026-07-28"], "requested": "x"})));
    assert!(matches!(judge_discover(Err(&again)), Verdict::AskAgain { version: "2026-07-28" }));
    let none = error(-32022, Some(json!({"supported": ["2027-01-01"]})));
    let Verdict::Incompatible { supported } = judge_discover(Err(&none)) else { panic!("not incompatible") };
    assert_eq!(supported, ["2027-01-01"]);
}

#[test]
fn the_envelope_joins_the_callers_meta_and_replaces_reserved_keys() {
    let envelope = Envelope::new("2026-07-28", json!({"elicitation": {}}), json!({"name": "warden"}));
    let params = json!({
        "name": "echo",
        "_meta": {"progressToken": 7, PROTOCOL_VERSION_KEY: "1999-01-01", "traceparent": "00-x"},
    });
    let stamped = envelope.stamp(Some(params));
    assert_eq!(
        stamped["_meta"],
        json!({
            "progressToken": 7,
            "traceparent": "00-x",
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"elicitation": {}},
            CLIENT_INFO_KEY: {"name": "warden"},
        })
    );
    assert_eq!(stamped["name"], "echo");
    let bare = envelope.stamp_raw(raw(json!({})).get());
    assert_eq!(serde_json::from_str::<Value>(bare.get()).unwrap()["_meta"][PROTOCOL_VERSION_KEY], "2026-07-28");
    assert_eq!(envelope.stamp(None)["_meta"][CLIENT_INFO_KEY]["name"], "warden");
}

#[test]
fn an_interim_answer_is_recognised_and_a_complete_one_is_not() {
    let complete = raw(json!({"content": [{"type": "text", "text": "input_required"}]}));
    assert_eq!(InputRequired::detect(&complete), None);
    let explicit = raw(json!({"resultType": "complete", "content": []}));
    assert_eq!(InputRequired::detect(&explicit), None);
    let interim = raw(json!({
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": {"message": "name?"}}},
        "requestState": "opaque",
    }));
    let found = InputRequired::detect(&interim).unwrap().unwrap();
    assert_eq!(found.request_state.as_deref(), Some("opaque"));
    assert_eq!(found.input_requests["who"]["method"], "elicitation/create");
    let empty = raw(json!({"resultType": "input_required"}));
    assert!(InputRequired::detect(&empty).unwrap().is_err());
}

#[test]
fn a_retry_carries_the_answers_and_the_state_and_nothing_of_an_earlier_round() {
    let original = raw(json!({"name": "t", "arguments": {"a": 1}, "requestState": "old", "inputResponses": {"x": 1}}));
    let mut answers = Map::new();
    answers.insert("who".into(), json!({"action": "accept", "content": {"name": "Ada"}}));
    let retry: Value = serde_json::from_str(retry_params(original.get(), answers, Some("new")).get()).unwrap();
    assert_eq!(
        retry,
        json!({"name": "t", "arguments": {"a": 1}, "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}, "requestState": "new"})
    );
    let bare: Value = serde_json::from_str(retry_params(original.get(), Map::new(), None).get()).unwrap();
    assert_eq!(bare, json!({"name": "t", "arguments": {"a": 1}}));
}

#[test]
fn a_log_level_rides_every_request_once_set() {
    let mut envelope = Envelope::new("2026-07-28", json!({}), json!({"name": "warden"}));
    envelope.set_log_level(Some("warning"));
    assert_eq!(envelope.stamp(None)["_meta"][LOG_LEVEL_KEY], "warning");
    envelope.set_log_level(None);
    assert!(envelope.stamp(None)["_meta"].get(LOG_LEVEL_KEY).is_none());
}

#[test]
fn a_calls_own_log_level_wins_over_the_connections_written_either_way() {
    let mut envelope = Envelope::new("2026-07-28", json!({}), json!({"name": "warden"}));
    let own = json!({"name": "t", "_meta": {LOG_LEVEL_KEY: "debug", "progressToken": 1}});
    for connection in [None, Some("error")] {
        envelope.set_log_level(connection);
        let tree = envelope.stamp(Some(own.clone()));
        let text: Value = serde_json::from_str(envelope.stamp_raw(raw(own.clone()).get()).get()).unwrap();
        assert_eq!(tree, text, "connection level {connection:?}");
        assert_eq!(text["_meta"][LOG_LEVEL_KEY], "debug", "connection level {connection:?}");
        assert_eq!(text["_meta"]["progressToken"], 1);
    }
    let without: Value = serde_json::from_str(envelope.stamp_raw(raw(json!({"name": "t"})).get()).get()).unwrap();
    assert_eq!(without["_meta"][LOG_LEVEL_KEY], "error", "the connection's level for other calls");
}

#[test]
fn the_envelope_written_into_text_is_the_envelope_written_into_a_tree() {
    let mut envelope = Envelope::new("2026-07-28", json!({"elicitation": {"form": {}}}), json!({"name": "warden"}));
    envelope.set_log_level(Some("info"));
    let cases = [
        json!({}),
        json!({"name": "echo", "arguments": {"text": "a \"quoted\" \\ line\n", "n": [1, 2.5, null]}}),
        json!({"name": "t", "arguments": {}, "_meta": {"progressToken": 7, "traceparent": "00-x"}}),
        json!({"_meta": {PROTOCOL_VERSION_KEY: "1999-01-01", "io.modelcontextprotocol/other": 1, "keep": true}}),
        json!({"we\"ird key": 1, "_meta": "not an object"}),
        json!(null),
        json!([1, 2]),
    ];
    for case in cases {
        let stamped = envelope.stamp_raw(raw(case.clone()).get());
        let from_text: Value = serde_json::from_str(stamped.get()).unwrap();
        assert_eq!(from_text, envelope.stamp(Some(case.clone())), "{case}");
    }
}

#[test]
fn the_config_knows_every_version_warden_speaks_and_no_other() {
    let spoken: Vec<&str> =
        MODERN_PROTOCOL_VERSIONS.iter().chain(crate::SUPPORTED_PROTOCOL_VERSIONS).copied().collect();
    assert_eq!(warden_config::KNOWN_PROTOCOL_VERSIONS.to_vec(), spoken);
}
