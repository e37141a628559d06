//! What a server cannot do with its requests to Warden, against the
//! scriptable test server (`ask_client` sends any request with any params,
//! and answers with what Warden said): a form outside the schema subset is
//! refused to the server naming the field, a server asking in a loop is
//! refused past the rate, and a secret in a question never reaches the
//! person. Real processes, real time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use warden_actors::{ElicitReply, ElicitationAnswer, ElicitationRequest, Warden};
use warden_tests::{bins, test_config};

/// Warden with the test server as `test` (a secret in its env) and an
/// elicitor that declines at once, recording each question's message.
async fn warden(extra: &str) -> (Warden, Arc<Mutex<Vec<String>>>) {
    let toml = format!(
        "{extra}[servers.test]\ncommand = {:?}\nargs = [\"--tools\", \"ask_client\"]\nenv = {{ API_TOKEN = \"tok-91c4e7a2b8\" }}\n",
        bins::test_server().display().to_string()
    );
    let config = test_config(&toml).expect("valid config");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = seen.clone();
    let elicitor = Arc::new(move |request: ElicitationRequest, answer: ElicitationAnswer| {
        record.lock().unwrap().push(request.request.message().to_string());
        let _ = answer.send(ElicitReply::Decline, "the test");
    });
    let warden = Warden::builder().config(&config).elicitor(elicitor).start().await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("the server settles");
    (warden, seen)
}

async fn ask(warden: &Warden, method: &str, params: Value) -> String {
    let arguments = json!({"method": method, "params": params});
    warden.call_tool("test__ask_client", arguments).await.expect("the call runs").text()
}

fn form(message: &str, properties: Value) -> Value {
    json!({"message": message, "requestedSchema": {"type": "object", "properties": properties}})
}

#[tokio::test]
async fn a_form_outside_the_subset_is_refused_to_the_server_naming_the_field() {
    let (warden, seen) = warden("").await;
    let nested = form("Where?", json!({"address": {"type": "object", "properties": {}}}));
    assert_eq!(
        ask(&warden, "elicitation/create", nested).await,
        "error: -32602 elicitation field `address`: type `object` is not allowed; a form field is a string, number, integer, boolean or enum"
    );
    let scheme = json!({"mode": "url", "message": "Open", "url": "javascript:alert(1)", "elicitationId": "x"});
    assert_eq!(
        ask(&warden, "elicitation/create", scheme).await,
        "error: -32602 the elicitation URL `javascript:alert(1)` is not an http(s) URL; Warden shows no other"
    );
    assert!(seen.lock().unwrap().is_empty(), "no person saw either");
    let fine = form("Name?", json!({"name": {"type": "string"}}));
    assert_eq!(ask(&warden, "elicitation/create", fine).await, r#"result: {"action":"decline"}"#);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_secret_in_a_question_is_redacted_before_the_person_sees_it() {
    // The tool's own leak rule is off, so the secret reaches the server in
    // the arguments and comes back in its question.
    let (warden, seen) = warden("[security.tool_policies.test__ask_client]\nleaks = \"off\"\n").await;
    let leaky = form("Confirm the key tok-91c4e7a2b8 please", json!({}));
    assert_eq!(ask(&warden, "elicitation/create", leaky).await, r#"result: {"action":"decline"}"#);
    let shown = seen.lock().unwrap()[0].clone();
    assert!(!shown.contains("tok-91c4e7a2b8") && shown.starts_with("Confirm the key [REDACTED"), "{shown}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_server_asking_in_a_loop_is_refused_past_the_rate() {
    let (warden, seen) = warden("").await;
    for n in 0..30 {
        let answer = ask(&warden, "elicitation/create", form(&format!("question {n}"), json!({}))).await;
        assert_eq!(answer, r#"result: {"action":"decline"}"#, "question {n}");
    }
    let refused = ask(&warden, "elicitation/create", form("question 30", json!({}))).await;
    assert_eq!(
        refused,
        "error: -32600 server 'test' sent more than 30 requests for a person in 60 s; Warden refuses more until the rate falls"
    );
    assert_eq!(seen.lock().unwrap().len(), 30);
    warden.shutdown().await;
}
