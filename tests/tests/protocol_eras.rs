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
use warden_actors::{
    CallLogs, CallOptions, ElicitReply, ElicitationAnswer, ElicitationRequest, ServerRequest, ServerState,
    ServerStatus, Warden,
};
use warden_protocol::LogLevel;
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
const ALL_TOOLS: [&str; 14] = [
    "add_note",
    "echo",
    "era",
    "get_prompt",
    "grow",
    "list_prompts",
    "list_resources",
    "locate",
    "measure",
    "read_resource",
    "served",
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
        // Its ten tools, and the four that wrap the resources and prompts it
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

// --- Caching (2026-07-28 `ttlMs` / `cacheScope`) --------------------------

/// How many `method` requests server `name` has seen.
async fn served(warden: &Warden, name: &str, method: &str) -> u64 {
    let count = text(warden, &format!("{name}__served"), json!({"method": method})).await;
    count.parse().unwrap_or_else(|_| panic!("a count, not {count:?}"))
}

#[tokio::test]
async fn a_modern_servers_fresh_answers_are_given_again_without_asking_it_and_private_ones_only_to_their_owner() {
    let hinted = "env = { ERA_CACHE_HINTS = \"1\" }\n[[agents]]\nname = \"alice\"\nallowed_tools = [\"*\"]\n\
                  [[agents]]\nname = \"bob\"\nallowed_tools = [\"*\"]";
    let (warden, _questions) =
        start(&[server("legacy", "legacy", "env = { ERA_CACHE_HINTS = \"1\" }"), server("modern", "modern", hinted)])
            .await;
    let (alice, bob) = (warden.agent("alice").unwrap(), warden.agent("bob").unwrap());
    let host = warden.host();
    let list = |name: &'static str| host.request(name, ServerRequest::ListResources, json!({}), CallOptions::default());

    // Public for a minute: asked once, whoever asks, through a front's
    // request or a wrapper tool; the time left is what is passed on.
    let first = list("modern").await.unwrap();
    assert_eq!(first["ttlMs"], 60_000);
    let again = alice.request("modern", ServerRequest::ListResources, json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(again["resources"], first["resources"]);
    let left = again["ttlMs"].as_u64().unwrap();
    assert!((1..60_000).contains(&left), "the time left: {left}");
    assert!(text(&warden, "modern__list_resources", json!({})).await.contains("note://current"));
    assert_eq!(served(&warden, "modern", "resources/list").await, 1);
    // A legacy server's answers are asked for every time.
    for _ in 0..2 {
        list("legacy").await.unwrap();
    }
    assert_eq!(served(&warden, "legacy", "resources/list").await, 2);

    // Private: once for each identity (an agent, or the host).
    for asker in [&alice, &alice, &bob] {
        asker.request("modern", ServerRequest::ListPrompts, json!({}), CallOptions::default()).await.unwrap();
    }
    warden.host().request("modern", ServerRequest::ListPrompts, json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(served(&warden, "modern", "prompts/list").await, 3);

    // A read is kept by its URI until the server says the resource changed.
    let host = warden.host();
    let read =
        |uri: &str| host.request("modern", ServerRequest::ReadResource, json!({"uri": uri}), CallOptions::default());
    for _ in 0..2 {
        read("note://current").await.unwrap();
    }
    assert_eq!(served(&warden, "modern", "resources/read").await, 1);
    let subscribe = ServerRequest::Subscribe;
    warden.host().request("modern", subscribe, json!({"uri": "note://current"}), CallOptions::default()).await.unwrap();
    assert_eq!(text(&warden, "modern__touch", json!({})).await, "touched");
    let reread = async {
        while served(&warden, "modern", "resources/read").await < 2 {
            read("note://current").await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), reread).await.expect("the update drops the kept read");

    // A list change drops the list: the new resource is seen at once.
    assert_eq!(text(&warden, "modern__add_note", json!({"name": "fresh"})).await, "noted");
    let seen = async {
        while !list("modern").await.unwrap()["resources"].to_string().contains("note://fresh") {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), seen).await.expect("the list change drops the kept list");

    // Fresh for a second: asked again once that has passed.
    // (The wrapper tool above listed them too, long enough ago.)
    let host = warden.host();
    let templates = || host.request("modern", ServerRequest::ListResourceTemplates, json!({}), CallOptions::default());
    let before = served(&warden, "modern", "resources/templates/list").await;
    templates().await.unwrap();
    templates().await.unwrap();
    assert_eq!(served(&warden, "modern", "resources/templates/list").await, before + 1);
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    templates().await.unwrap();
    assert_eq!(served(&warden, "modern", "resources/templates/list").await, before + 2);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_tool_list_is_read_again_when_its_ttl_runs_out() {
    let (warden, _questions) = start(&[server("modern", "modern", "env = { ERA_CACHE_HINTS = \"1\" }")]).await;
    let before = served(&warden, "modern", "tools/list").await;
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let after = served(&warden, "modern", "tools/list").await;
    // Fresh for 1.5 s: read about twice in 3.5 s (not in a loop).
    assert!((before + 1..=before + 3).contains(&after), "{before} then {after}");
    warden.shutdown().await;
}

// --- A call's own log messages (2026-07-28 `logLevel` per request) ---------

/// Calls `tool` asking for its log messages at `level`; what came.
async fn logged(warden: &Warden, tool: &str, level: LogLevel) -> Vec<serde_json::Value> {
    let (sink, mut messages) = mpsc::channel(16);
    let options = CallOptions::default().logs(CallLogs { level, sink });
    let host = warden.host();
    let call = host.call(tool, json!({"words": format!("{tool} shouts")}), options);
    let result = tokio::time::timeout(Duration::from_secs(30), call).await.expect("the call ends").unwrap();
    assert_eq!(result.text(), "shouted");
    let mut seen = Vec::new();
    while let Ok(message) = messages.try_recv() {
        seen.push(message);
    }
    seen
}

#[tokio::test]
async fn a_call_that_asks_for_its_log_messages_gets_its_own_over_stdio_and_http() {
    let (_http, over_http) = http_server("over_http", "modern", "").await;
    let (warden, _questions) = start(&[server("over_stdio", "modern", ""), over_http]).await;
    for name in ["over_stdio", "over_http"] {
        let tool = format!("{name}__shout");
        let seen = logged(&warden, &tool, LogLevel::Info).await;
        let expected = json!([{"level": "warning", "logger": "shouter", "data": format!("{tool} shouts")}]);
        assert_eq!(json!(seen), expected, "{name}");
        // Asked for errors only: the server sends no warning.
        assert_eq!(logged(&warden, &tool, LogLevel::Error).await, Vec::<serde_json::Value>::new(), "{name}");
    }
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
