//! `warden mcp` against MCP clients other people wrote: the official
//! TypeScript SDK client (over `--no-daemon`) and the official Python SDK
//! client (through the daemon, the default), each running the same
//! scenario against server-everything and the test server behind Warden;
//! and a scripted line client for what the SDKs never send — bad lines, a
//! request before `initialize` — and for `list_changed` after a reload.

#![allow(unused_crate_dependencies)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{stderr, Home, LineClient};
use serde_json::{json, Value};
use warden_tests::{bins, real_servers};

/// A home whose config runs server-everything as `everything` and the test
/// server as `test` (with the tools the scenarios use), calls auto-approved.
fn home(label: &str) -> Home {
    let home = Home::new(label);
    let (node, args) = real_servers::EVERYTHING.command(&[]);
    let text = format!(
        "[security]\nauto_approve = true\n\n[servers.everything]\ncommand = {node:?}\nargs = {args:?}\n\n\
         [servers.test]\ncommand = {:?}\nargs = [\"--tools\", \"echo,sleep,notify,cancellations\"]\n",
        bins::test_server().display().to_string()
    );
    std::fs::write(&home.config, text).unwrap();
    home
}

/// Runs a client script (program + args) that starts `warden ARGS` itself,
/// and returns the JSON line it printed.
fn run_client(home: &Home, (program, mut args): (String, Vec<String>), warden_args: &[&str]) -> Value {
    let mut warden_args: Vec<String> = warden_args.iter().map(ToString::to_string).collect();
    warden_args.extend(["--config".to_string(), home.config.display().to_string()]);
    args.extend(["stdio".to_string(), env!("CARGO_BIN_EXE_warden").to_string(), json!(warden_args).to_string()]);
    home.client_json(&program, &args)
}

/// What both SDK clients saw the same way.
fn assert_common(seen: &Value) {
    assert_eq!(seen["server"], "warden");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|tool| tool.as_str().unwrap()).collect();
    for name in ["everything__echo", "everything__trigger-long-running-operation", "test__echo", "test__notify"] {
        assert!(tools.contains(&name), "{name} missing from {tools:?}");
    }
    // The primitive tools are for tool-only hosts, not for MCP clients.
    assert!(!tools.iter().any(|tool| tool.ends_with("__read_resource")), "{tools:?}");
    assert_eq!(seen["echo"], "Echo: hi");
    let uri = seen["resource_uri"].as_str().unwrap();
    assert!(uri.starts_with("warden://everything/demo://"), "{uri}");
    assert_eq!(seen["read_uri"], uri, "a read answers under the URI the client used");
    assert_eq!(seen["prompt_messages"], 1);
    assert_eq!(seen["progress"], 3, "three steps of progress, relayed under the client's token");
    assert_eq!(seen["notify"], "notified");
    assert_eq!(seen["loggers"], json!(["test"]), "log messages tagged with their server");
}

#[test]
fn the_typescript_sdk_client_uses_every_feature_through_warden_mcp() {
    let home = home("front-ts");
    let seen = run_client(&home, real_servers::node_script("front_client.mjs"), &["mcp", "--no-daemon"]);
    assert_common(&seen);
    let prompts = seen["prompts"].as_array().unwrap();
    assert!(prompts.contains(&json!("everything__completable-prompt")), "{prompts:?}");
    assert_eq!(seen["completion"], json!(["Engineering"]));
    assert_eq!(seen["cancel"], "aborted");
    assert!(seen["cancel_ms"].as_u64().unwrap() < 5_000, "{seen}");
    // The test server heard the cancellation of the client's `sleep`.
    let cancellations = seen["cancellations"].as_str().unwrap();
    assert!(cancellations.starts_with("cancelled: ") && cancellations != "cancelled: none", "{cancellations}");
    assert!(seen["tool_changes"].as_u64().unwrap() >= 1, "tools/list_changed after the server's change: {seen}");
    assert_eq!(seen["late_tool_listed"], true);
}

#[test]
fn the_python_sdk_client_uses_warden_mcp_through_the_daemon() {
    let home = home("front-py");
    let script = real_servers::python_script("front_client.py");
    let seen = run_client(&home, real_servers::python_server_command(&script), &["mcp"]);
    assert_common(&seen);
    // The session ran in the daemon, which is still up with warm servers.
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
}

#[test]
fn bad_lines_are_answered_and_the_session_goes_on_and_a_reload_announces_new_tools() {
    let home = Home::with_test_server("front-lines", "");
    let mut client = LineClient::start(&home, &["mcp"]);
    client.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let early = client.answer(1);
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(early["error"]["message"].as_str().unwrap().contains("send `initialize` first"), "{early}");
    client.send("this is not json");
    let garbage = client.until(|message| message["id"].is_null());
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    client.send(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#);
    let batch = client.until(|message| message["id"].is_null());
    assert!(batch["error"]["message"].as_str().unwrap().contains("batches are not supported"), "{batch}");
    client.send(
        r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"lines","version":"1"}}}"#,
    );
    let init = client.answer(3);
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "the client's version is kept when Warden speaks it");
    client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    client.send(r#"{"jsonrpc":"2.0","id":4,"method":"server/discover"}"#);
    assert_eq!(client.answer(4)["error"]["code"], -32601);
    client.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope__x","arguments":{}}}"#);
    let unknown = client.answer(5);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("nope__x"), "{unknown}");
    client.send(r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#);
    let listed = client.answer(6);
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"test__echo") && !names.iter().any(|name| name.starts_with("extra__")), "{names:?}");

    // A reload that adds a server: the session hears the list changed.
    home.write(&["test", "extra"], "");
    let reload = home.reload();
    assert_eq!(reload.status.code(), Some(0), "{}", stderr(&reload));
    client.until(|message| message["method"] == "notifications/tools/list_changed");
    client.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"extra__echo","arguments":{"message":"new"}}}"#);
    assert_eq!(client.answer(7)["result"]["content"][0]["text"], "new");

    // Closing stdin ends `warden mcp`.
    drop(client.child.stdin.take());
    let status = client.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A line client of any stdio MCP server: initialize (declaring
/// elicitation, which Warden declares upstream for its one client, so both
/// servers offer the same tools), then `requests` one by one; their
/// answers' results (or errors).
fn answers_of(mut client: LineClient, requests: &[Value]) -> Vec<Value> {
    client.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}, "url": {}}}, "clientInfo": {"name": "compare", "version": "1"}}})
        .to_string(),
    );
    client.answer(0);
    client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let answers = requests
        .iter()
        .enumerate()
        .map(|(n, request)| {
            let id = n as i64 + 1;
            let mut request = request.clone();
            request["jsonrpc"] = json!("2.0");
            request["id"] = json!(id);
            client.send(&request.to_string());
            let mut answer = client.answer(id);
            answer.as_object_mut().unwrap().remove("id");
            answer
        })
        .collect();
    let _ = client.child.kill();
    answers
}

#[test]
fn one_server_through_warden_answers_what_the_bare_server_answers() {
    let home = home("front-transparent");
    let requests = [
        json!({"method": "tools/list"}),
        json!({"method": "tools/call", "params": {"name": "echo", "arguments": {"message": "same"}}}),
        json!({"method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 2, "b": 3}}}),
        json!({"method": "resources/list"}),
        json!({"method": "resources/templates/list"}),
        json!({"method": "resources/read", "params": {"uri": "demo://resource/static/document/architecture.md"}}),
        json!({"method": "prompts/list"}),
        json!({"method": "prompts/get", "params": {"name": "args-prompt", "arguments": {"city": "Paris"}}}),
        json!({"method": "completion/complete", "params": {"ref": {"type": "ref/prompt", "name": "completable-prompt"},
            "argument": {"name": "department", "value": "S"}}}),
    ];
    let (node, args) = real_servers::EVERYTHING.command(&[]);
    let mut bare = Command::new(node);
    bare.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let direct = answers_of(LineClient::spawn(bare), &requests);
    let through = answers_of(LineClient::start(&home, &["mcp", "--no-daemon", "--server", "everything"]), &requests);
    for ((request, direct), through) in requests.iter().zip(&direct).zip(&through) {
        assert!(direct.get("result").is_some(), "the bare server refused {request}: {direct}");
        assert_eq!(through, direct, "through Warden, {request} was answered differently");
    }
}

/// The pid of `server` per `warden status --json`, once it runs.
fn server_pid(home: &Home, server: &str) -> Option<u64> {
    let status: Value = serde_json::from_slice(&home.warden(&["status", "--json"]).stdout).ok()?;
    let row = status["servers"].as_array()?.iter().find(|row| row["name"] == server)?.clone();
    (row["state"] == "running").then(|| row["pid"].as_u64()).flatten()
}

fn initialized(home: &Home) -> LineClient {
    let mut client = LineClient::start(home, &["mcp"]);
    client.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"subs","version":"1"}}}"#,
    );
    client.answer(0);
    client
}

#[test]
fn resource_updates_reach_only_their_subscribers_and_survive_a_server_restart() {
    let home = home("front-subscriptions");
    let uri = "warden://everything/demo://resource/static/document/architecture.md";
    let mut subscriber = initialized(&home);
    let mut bystander = initialized(&home);
    subscriber
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}}).to_string());
    let subscribed = subscriber.answer(1);
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    let toggle = |id: i64| call_line(id, "everything__toggle-subscriber-updates");
    bystander.send(&toggle(2));
    bystander.answer(2);
    let updated = subscriber.until(|message| message["method"] == "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], uri, "the update names the URI the client subscribed to");
    bystander.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string());
    let next = bystander.until(|message| message["id"] == 3 || message["method"] == "notifications/resources/updated");
    assert_eq!(next["id"], 3, "a session that did not subscribe got an update: {next}");

    // The server dies; its new process knows nothing of the subscription
    // until Warden sends it again.
    let pid = server_pid(&home, "everything").expect("everything runs");
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let mut restarted = None;
    for _ in 0..100 {
        restarted = server_pid(&home, "everything").filter(|new| *new != pid);
        if restarted.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(restarted.is_some(), "everything did not come back");
    std::thread::sleep(Duration::from_millis(500));
    subscriber.send(&toggle(4));
    let updated = subscriber.until(|message| message["method"] == "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], uri);
}

fn call_line(id: i64, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}}).to_string()
}

#[test]
fn an_agent_may_not_subscribe_to_resources_its_allowlist_does_not_cover() {
    let home = home("front-agent-subscribe");
    let mut text = std::fs::read_to_string(&home.config).unwrap();
    text += "\n[[agents]]\nname = \"coder\"\nallowed_tools = [\"test__*\"]\n";
    std::fs::write(&home.config, text).unwrap();
    let mut client = LineClient::start(&home, &["mcp", "--no-daemon", "--agent", "coder"]);
    client.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}"#,
    );
    client.answer(0);
    let uri = "warden://everything/demo://resource/static/document/architecture.md";
    client
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}}).to_string());
    let refused = client.answer(1);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let said = refused["error"]["message"].as_str().unwrap();
    assert!(said.contains("agent 'coder' may not use 'everything__read_resource'"), "{said}");
    client.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}).to_string());
    assert_eq!(client.answer(2)["result"]["resources"], json!([]), "the agent sees no resources of everything");
}
