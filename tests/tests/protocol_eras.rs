//! MCP 2026-07-28 and the `initialize` revisions, spoken to real servers:
//! the official Python SDK (`tests/python/era_server.py`, pinned) serving
//! one era only, or both. Warden must find out what each speaks, speak
//! the newest both know, and reach the same tools, questions and list
//! changes either way — and never break the old server while preferring
//! the new revision.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map};
use tokio::sync::mpsc;
use warden_actors::{ElicitReply, ElicitationAnswer, ElicitationRequest, ServerState, ServerStatus, Warden};
use warden_tests::python_http::PythonHttpServer;
use warden_tests::real_servers::{python_script, python_server_command};
use warden_tests::test_config;

type Questions = mpsc::UnboundedReceiver<(ElicitationRequest, ElicitationAnswer)>;

/// One `[servers.NAME]` entry of the era server in `mode`, plus `extra`.
fn server(name: &str, mode: &str, extra: &str) -> String {
    let (python, mut args) = python_server_command(&python_script("era_server.py"));
    args.push(mode.into());
    format!("[servers.{name}]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\n{extra}\n")
}

/// Warden with `servers` (TOML entries), every question
/// handed to the test.
async fn start(servers: &[String]) -> (Warden, Questions) {
    // `test_config` turns auto-approval on.
    let toml = servers.join("\n");
    let config = test_config(&toml).expect("valid config");
    let (questions, receiver) = mpsc::unbounded_channel();
    let warden = Warden::builder()
        .config(&config)
        .elicitor(Arc::new(move |request, answer| {
            let _ = questions.send((request, answer));
        }))
        .start()
        .await
        .expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(90), warden.settled()).await.expect("the servers settle");
    (warden, receiver)
}

fn status(warden: &Warden, name: &str) -> ServerStatus {
    warden.status().into_iter().find(|server| server.name == name).expect("the server is configured")
}

/// The era server's tools and the wrappers of its resources and prompts.
const ALL_TOOLS: [&str; 12] = [
    "echo",
    "era",
    "get_prompt",
    "grow",
    "list_prompts",
    "list_resources",
    "locate",
    "measure",
    "read_resource",
    "shout",
    "touch",
    "whoami",
];

/// The tools of server `name`, sorted.
fn tool_names(warden: &Warden, name: &str) -> Vec<String> {
    let prefix = format!("{name}__");
    warden.tools().into_iter().map(|tool| tool.name).filter(|tool| tool.starts_with(&prefix)).collect()
}

async fn text(warden: &Warden, tool: &str, arguments: serde_json::Value) -> String {
    let call = warden.call_tool(tool, arguments);
    let result = tokio::time::timeout(Duration::from_secs(30), call).await.expect("the call ends within 30 s");
    result.unwrap_or_else(|error| panic!("{tool}: {error}")).text()
}

/// Calls `name__whoami` and answers its question with `who`; the result.
async fn whoami(warden: &Warden, questions: &mut Questions, name: &str, who: &str) -> String {
    let tool = format!("{name}__whoami");
    let call = {
        let (warden, tool) = (warden.clone(), tool.clone());
        tokio::spawn(async move { text(&warden, &tool, json!({})).await })
    };
    let (request, answer) =
        tokio::time::timeout(Duration::from_secs(30), questions.recv()).await.expect("a question").unwrap();
    assert_eq!((request.server.as_str(), request.tool.as_deref()), (name, Some(tool.as_str())));
    let mut content = Map::new();
    content.insert("name".into(), json!(who));
    answer.send(ElicitReply::Accept(Some(content)), "the test").unwrap();
    call.await.unwrap()
}

/// Calls `name__grow`; returns once Warden lists `name__late`.
async fn grows(warden: &Warden, name: &str) {
    assert_eq!(text(warden, &format!("{name}__grow"), json!({})).await, "grown");
    let late = format!("{name}__late");
    let listed = async {
        while !warden.tools().iter().any(|tool| tool.name == late) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), listed).await.unwrap_or_else(|_| panic!("{late} is listed"));
}

#[tokio::test]
async fn auto_speaks_2026_07_28_to_servers_that_speak_it_and_initialize_to_those_that_do_not() {
    let (warden, _questions) =
        start(&[server("modern", "modern", ""), server("legacy", "legacy", ""), server("dual", "dual", "")]).await;
    for (name, version, era) in
        [("modern", "2026-07-28", "modern"), ("legacy", "2025-11-25", "legacy"), ("dual", "2026-07-28", "modern")]
    {
        let status = status(&warden, name);
        assert_eq!(status.state, ServerState::Running, "{name}: {status:?}");
        assert_eq!(status.protocol_version.as_deref(), Some(version), "{name}");
        let info = status.server_info.expect("the server named itself");
        assert_eq!((info.name.as_str(), info.version.as_str()), ("warden-era-test-server", "2.0.0"), "{name}");
        // Its eight tools, and the four that wrap the resources and prompts it
        // offers (over stdio, `measure`'s header declaration is no matter).
        assert_eq!(tool_names(&warden, name), ALL_TOOLS.map(|tool| format!("{name}__{tool}")), "{name}");
        assert_eq!(text(&warden, &format!("{name}__echo"), json!({"message": "hi"})).await, "hi", "{name}");
        assert_eq!(text(&warden, &format!("{name}__era"), json!({})).await, era, "{name}");
    }
    warden.shutdown().await;
}

#[tokio::test]
async fn a_question_is_answered_the_same_whether_it_came_as_input_required_or_as_a_request() {
    let (warden, mut questions) = start(&[server("modern", "modern", ""), server("legacy", "legacy", "")]).await;
    for name in ["modern", "legacy"] {
        assert_eq!(whoami(&warden, &mut questions, name, "Ada").await, "hello Ada", "{name}");
    }
    // Counted alike, whichever way they came.
    let metrics = warden.metrics().encode(&warden.status());
    for name in ["modern", "legacy"] {
        let line = format!("warden_elicitations_total{{server=\"{name}\",outcome=\"accept\"}} 1\n");
        assert!(metrics.contains(&line), "{line}in {metrics}");
    }
    warden.shutdown().await;
}

#[tokio::test]
async fn a_modern_servers_list_changes_arrive_through_its_subscription() {
    let (warden, _questions) = start(&[server("modern", "modern", ""), server("legacy", "legacy", "")]).await;
    for name in ["modern", "legacy"] {
        grows(&warden, name).await;
        assert_eq!(text(&warden, &format!("{name}__late"), json!({})).await, "late");
    }
    warden.shutdown().await;
}

#[tokio::test]
async fn a_forced_version_is_spoken_or_the_server_fails_saying_why() {
    let (warden, _questions) = start(&[
        server("old_to_new", "modern", "protocol_version = \"2025-11-25\""),
        server("new_to_old", "legacy", "protocol_version = \"2026-07-28\""),
        server("dual_old", "dual", "protocol_version = \"2025-11-25\""),
        server("dual_new", "dual", "protocol_version = \"2026-07-28\""),
    ])
    .await;
    let ServerState::Failed { reason } = status(&warden, "old_to_new").state else { panic!("old_to_new runs") };
    assert!(reason.starts_with("it refused `initialize`: "), "{reason}");
    assert!(reason.ends_with("(JSON-RPC error -32022)"), "{reason}");
    let ServerState::Failed { reason } = status(&warden, "new_to_old").state else { panic!("new_to_old runs") };
    assert!(
        reason.starts_with(
            "`protocol_version = \"2026-07-28\"`, but it does not speak that revision: `server/discover` was \
             answered with error -32600: "
        ),
        "{reason}"
    );
    assert!(reason.ends_with("; set `protocol_version = \"auto\"` or a version it speaks"), "{reason}");
    assert_eq!(status(&warden, "dual_old").protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(text(&warden, "dual_old__era", json!({})).await, "legacy");
    assert_eq!(status(&warden, "dual_new").protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(text(&warden, "dual_new__era", json!({})).await, "modern");
    warden.shutdown().await;
}

// --- Over Streamable HTTP ----------------------------------------------------

/// The era server in `mode` over HTTP, and its `[servers.NAME]` entry.
async fn http_server(name: &str, mode: &str, extra: &str) -> (PythonHttpServer, String) {
    let server = PythonHttpServer::start("era_server.py", &[mode, "http"]).await;
    let entry = format!("[servers.{name}]\nurl = {:?}\nstartup_timeout_secs = 60\n{extra}\n", server.url);
    (server, entry)
}

#[tokio::test]
async fn over_http_each_server_is_spoken_to_in_the_newest_revision_it_speaks() {
    let (_modern, modern) = http_server("modern", "modern", "").await;
    let (_legacy, legacy) = http_server("legacy", "legacy", "").await;
    let (_dual, dual) = http_server("dual", "dual", "").await;
    let (warden, mut questions) = start(&[modern, legacy, dual]).await;
    for (name, version, era) in
        [("modern", "2026-07-28", "modern"), ("legacy", "2025-11-25", "legacy"), ("dual", "2026-07-28", "modern")]
    {
        let status = status(&warden, name);
        assert_eq!(status.state, ServerState::Running, "{name}: {status:?}");
        assert_eq!(status.protocol_version.as_deref(), Some(version), "{name}");
        assert_eq!(status.last_error, None, "the probe is not a fault: {name}");
        // A tool whose `x-mcp-header` breaks the rules is left out over
        // HTTP in 2026-07-28; a marked parameter goes in its header too
        // (the SDK checks it against the body: padded, so in Base64).
        let expected: Vec<String> = ALL_TOOLS
            .iter()
            .filter(|tool| era == "legacy" || **tool != "measure")
            .map(|tool| format!("{name}__{tool}"))
            .collect();
        assert_eq!(tool_names(&warden, name), expected, "{name}");
        let located = text(&warden, &format!("{name}__locate"), json!({"region": " eu-west "})).await;
        assert_eq!(located, "region  eu-west ", "{name}");
        assert_eq!(text(&warden, &format!("{name}__echo"), json!({"message": "hi"})).await, "hi", "{name}");
        assert_eq!(text(&warden, &format!("{name}__era"), json!({})).await, era, "{name}");

        // A question: an `input_required` answer (modern), a request on
        // the call's stream (legacy).
        assert_eq!(whoami(&warden, &mut questions, name, "Grace").await, "hello Grace", "{name}");
        // A list change: on the `subscriptions/listen` stream (modern),
        // on the GET stream (legacy).
        grows(&warden, name).await;
    }
    warden.shutdown().await;
}
