//! How answers are read off a stdio server's output: a call's answer is
//! taken by the reader and decoded once, whatever the order of its
//! members; what cannot be read that way goes the usual way, and says what
//! is wrong as it always did.

use std::time::Duration;

use serde_json::json;
use warden_actors::{CallError, ServerState, Warden};
use warden_tests::{bins, test_config};

async fn started() -> Warden {
    let command = bins::test_server().display().to_string();
    let text = format!("[servers.test]\ncommand = {command:?}\nargs = [\"--tools\", \"echo,mischief\"]\n");
    let warden = Warden::start(&test_config(&text).expect("valid")).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("the server settles");
    warden
}

async fn mischief(warden: &Warden, kind: &str) -> Result<String, CallError> {
    warden.call_tool("test__mischief", json!({"kind": kind})).await.map(|result| result.text())
}

#[tokio::test]
async fn an_answer_written_result_first_reads_as_one_written_result_last() {
    let warden = started().await;
    assert_eq!(mischief(&warden, "result_first").await.unwrap(), "result first");
    assert_eq!(warden.call_tool("test__echo", json!({"message": "after"})).await.unwrap().text(), "after");
    warden.shutdown().await;
}

#[tokio::test]
async fn an_answer_line_that_is_not_json_is_skipped_and_the_whole_answer_after_it_lands() {
    let warden = started().await;
    assert_eq!(mischief(&warden, "broken_then_whole").await.unwrap(), "whole");
    assert_eq!(warden.status()[0].state, ServerState::Running);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_result_that_is_not_a_tool_result_fails_that_call_only_saying_why() {
    let warden = started().await;
    let error = mischief(&warden, "not_a_tool_result").await.unwrap_err();
    assert!(
        matches!(&error, CallError::BadResult { server, name, .. } if server == "test" && name == "test__mischief")
    );
    assert_eq!(
        error.to_string(),
        "server 'test' answered 'test__mischief' with something that is not a tool result: \
         invalid type: string \"not a list\", expected a sequence"
    );
    assert_eq!(warden.call_tool("test__echo", json!({"message": "after"})).await.unwrap().text(), "after");
    warden.shutdown().await;
}
