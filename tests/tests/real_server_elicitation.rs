//! Elicitation against server-everything (pinned, from npm): its form uses
//! every field kind MCP allows (text with formats, boolean, integer and
//! number with bounds, untitled, titled and legacy enums, multi-selects),
//! and its URL tool asks both ways — an `elicitation/create` request, and
//! the -32042 "URL elicitation required" error, after which Warden asks
//! the person to open the URL and calls again. Real processes, real time.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use warden_actors::{CallError, ElicitReply, ElicitRequest, ElicitationAnswer, ElicitationRequest, Warden};
use warden_tests::real_servers::EVERYTHING;
use warden_tests::test_config;

type Questions = mpsc::UnboundedReceiver<(ElicitationRequest, ElicitationAnswer)>;

async fn start() -> (Warden, Questions) {
    let (node, args) = EVERYTHING.command(&[]);
    let config = test_config(&format!("[servers.everything]\ncommand = {node:?}\nargs = {args:?}\n")).unwrap();
    let (questions, receiver) = mpsc::unbounded_channel();
    let elicitor = Arc::new(move |request, answer| {
        let _ = questions.send((request, answer));
    });
    let warden = Warden::builder().config(&config).elicitor(elicitor).start().await.unwrap();
    tokio::time::timeout(Duration::from_secs(90), warden.settled()).await.expect("server-everything settles");
    (warden, receiver)
}

fn call(warden: &Warden, tool: &str, arguments: Value) -> tokio::task::JoinHandle<Result<String, CallError>> {
    let (warden, tool) = (warden.clone(), tool.to_string());
    tokio::spawn(async move { warden.call_tool(&tool, arguments).await.map(|result| result.text()) })
}

async fn next(questions: &mut Questions) -> (ElicitationRequest, ElicitationAnswer) {
    tokio::time::timeout(Duration::from_secs(30), questions.recv()).await.expect("a question in time").unwrap()
}

#[tokio::test]
async fn every_field_kind_of_server_everythings_form_is_read_and_answered() {
    let (warden, mut questions) = start().await;
    let task = call(&warden, "everything__trigger-elicitation-request", json!({}));
    let (request, answer) = next(&mut questions).await;
    let ElicitRequest::Form { schema, .. } = &request.request else { panic!("a form: {request:?}") };
    let kinds: Vec<(String, String)> =
        schema.fields.iter().map(|field| (field.name.clone(), field.kind.describe())).collect();
    assert_eq!(kinds.len(), 13, "{kinds:?}");
    assert!(kinds.contains(&("integer".into(), "a whole number from 1 to 100".into())), "{kinds:?}");
    assert!(kinds.contains(&("legacyTitledEnum".into(), "one of: pet-1, pet-2, pet-3, pet-4, pet-5".into())));
    let multi = ("titledMultipleSelectEnum".into(), "a list of one of: fish-1, fish-2, fish-3, 1 to 3 items".into());
    assert!(kinds.contains(&multi), "{kinds:?}");
    assert!(kinds.contains(&("birthdate".into(), "text (a date, YYYY-MM-DD)".into())), "{kinds:?}");
    // Only `name` is required; a person types titles for choices.
    let content: Map<String, Value> =
        json!({"name": "Ada Lovelace", "legacyTitledEnum": "Dogs", "email": "ada@example.org"})
            .as_object()
            .unwrap()
            .clone();
    answer.send(ElicitReply::Accept(Some(content)), "the test").unwrap();
    let text = tokio::time::timeout(Duration::from_secs(30), task).await.unwrap().unwrap().unwrap();
    assert!(text.starts_with("✅ User provided the requested information!"), "{text}");
    assert!(
        text.contains("- Name: Ada Lovelace") && text.contains("- Favorite Integer: 42"),
        "defaults filled in: {text}"
    );
    assert!(text.contains("\"legacyTitledEnum\": \"pet-2\""), "a title picks its value: {text}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_url_required_error_has_the_person_open_the_url_and_the_call_made_again() {
    let (warden, mut questions) = start().await;
    let arguments = json!({"url": "https://example.com/consent", "errorPath": true});
    let task = call(&warden, "everything__trigger-url-elicitation", arguments.clone());
    // First the prerequisite the -32042 error named...
    let (prerequisite, answer) = next(&mut questions).await;
    let ElicitRequest::Url { url, .. } = &prerequisite.request else { panic!("a URL: {prerequisite:?}") };
    assert_eq!(url, "https://modelcontextprotocol.io");
    assert_eq!(prerequisite.tool.as_deref(), Some("everything__trigger-url-elicitation"));
    answer.send(ElicitReply::Accept(None), "the test").unwrap();
    // ...then, on the call made again, the URL itself.
    let (request, answer) = next(&mut questions).await;
    let ElicitRequest::Url { url, .. } = &request.request else { panic!("a URL: {request:?}") };
    assert_eq!(url, "https://example.com/consent");
    answer.send(ElicitReply::Accept(None), "the test").unwrap();
    let text = tokio::time::timeout(Duration::from_secs(30), task).await.unwrap().unwrap().unwrap();
    assert!(text.starts_with("✅ User completed the URL elicitation flow."), "{text}");

    // Declined: the call fails saying so, and is not made again.
    let declined = json!({"url": "https://example.com/other", "errorPath": true});
    let task = call(&warden, "everything__trigger-url-elicitation", declined);
    let (_, answer) = next(&mut questions).await;
    answer.send(ElicitReply::Decline, "the test").unwrap();
    let error = tokio::time::timeout(Duration::from_secs(30), task).await.unwrap().unwrap().unwrap_err();
    assert_eq!(
        error.to_string(),
        "server 'everything' needs a URL opened before 'everything__trigger-url-elicitation' can run, and the person declined to open https://modelcontextprotocol.io"
    );
    assert!(questions.try_recv().is_err(), "nothing more was asked");
    warden.shutdown().await;
}
