//! A server's questions relayed to the MCP client whose call it is: the
//! official Python SDK client (with an elicitation callback) calls tools of
//! a Python SDK server that asks a form and a URL, through `warden mcp
//! --no-daemon`, through the daemon, and over the HTTP front. The client
//! is asked on its own call's path and its answer reaches the server.

#![allow(unused_crate_dependencies)]

mod common;

use std::process::Command;

use common::{stderr, Home};
use serde_json::{json, Value};
use warden_tests::real_servers::{python_script, python_server_command};

const TOKEN: &str = "front-token-0123456789abcdef";

/// A home whose config runs the asking server as `py`, plus `extra`.
fn home(label: &str, extra: &str) -> Home {
    let home = Home::new(label);
    let (python, args) = python_server_command(&python_script("asking_server.py"));
    let text = format!(
        "[security]\nauto_approve = true\n\n[servers.py]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\nprotocol_version = \"2025-11-25\"\n{extra}"
    );
    std::fs::write(&home.config, text).unwrap();
    home
}

/// Runs the Python SDK's asking client with `mode`, `target`, `extra`;
/// returns its JSON line.
fn run_client(home: &Home, mode: &str, target: &str, extra: &str) -> Value {
    run(home, python_server_command(&python_script("ask_client.py")), mode, target, extra)
}

/// Runs a client `program` + `args` with `mode`, `target`, `extra`.
fn run(home: &Home, (program, mut args): (String, Vec<String>), mode: &str, target: &str, extra: &str) -> Value {
    args.extend([mode.to_string(), target.to_string(), extra.to_string()]);
    home.client_json(&program, &args)
}

fn warden_args(home: &Home, args: &[&str]) -> String {
    let mut all: Vec<String> = args.iter().map(ToString::to_string).collect();
    all.extend(["--config".to_string(), home.config.display().to_string()]);
    json!(all).to_string()
}

/// What the client saw, the same on every path.
fn assert_relayed(seen: &Value) {
    assert_eq!(seen["booked"], "booked Ada small 4", "the client's answer, with the name's default: {seen}");
    assert_eq!(seen["signed"], "url accept", "{seen}");
    assert_eq!(
        seen["asked"],
        json!([
            {"mode": "form", "message": "Book a table for how many nights?", "fields": ["name", "size", "nights"]},
            {"mode": "url", "message": "Sign in to continue", "url": "https://login.example.com/auth?x=1"}
        ])
    );
}

#[test]
fn the_client_is_asked_through_warden_mcp_without_a_daemon() {
    let home = home("asking-no-daemon", "");
    let seen = run_client(&home, "stdio", env!("CARGO_BIN_EXE_warden"), &warden_args(&home, &["mcp", "--no-daemon"]));
    assert_relayed(&seen);
}

#[test]
fn the_client_is_asked_through_the_daemon_and_nothing_waits_in_its_queue() {
    let home = home("asking-daemon", "");
    let seen = run_client(&home, "stdio", env!("CARGO_BIN_EXE_warden"), &warden_args(&home, &["mcp"]));
    assert_relayed(&seen);
    let pending = home.warden(&["pending"]);
    assert_eq!(common::stdout(&pending), "nothing is waiting for a person\n", "{}", stderr(&pending));
}

#[test]
fn the_client_is_asked_on_its_calls_stream_over_the_http_front() {
    let home =
        home("asking-http", &format!("\n[front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n"));
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let port = common::bound_port(&status, "front");
    let seen = run_client(&home, "http", &format!("http://127.0.0.1:{port}/mcp"), TOKEN);
    assert_relayed(&seen);
    // The TypeScript SDK's client, on the same daemon.
    let node = warden_tests::real_servers::node_script("ask_client.mjs");
    let seen = run(&home, node, "http", &format!("http://127.0.0.1:{port}/mcp"), TOKEN);
    assert_relayed(&seen);
}

#[test]
fn the_typescript_sdk_client_is_asked_through_warden_mcp() {
    let home = home("asking-ts", "");
    let node = warden_tests::real_servers::node_script("ask_client.mjs");
    let seen = run(&home, node, "stdio", env!("CARGO_BIN_EXE_warden"), &warden_args(&home, &["mcp", "--no-daemon"]));
    assert_relayed(&seen);
}

#[test]
fn a_call_that_needs_approval_asks_its_own_client_once_for_the_session_or_denied() {
    let home = Home::new("asking-approvals");
    let text = format!(
        "[servers.test]\ncommand = {:?}\nargs = [\"--tools\", \"echo,pid\"]\n",
        warden_tests::bins::test_server().display().to_string()
    );
    std::fs::write(&home.config, text).unwrap();
    let (program, mut args) = python_server_command(&python_script("approve_client.py"));
    args.extend([
        "stdio".to_string(),
        env!("CARGO_BIN_EXE_warden").to_string(),
        warden_args(&home, &["mcp", "--no-daemon"]),
    ]);
    let output = Command::new(program).args(&args).env("WARDEN_HOME", &home.dir).output().expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the client failed: {stdout}\n{}", stderr(&output));
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    for n in 1..=4 {
        assert_eq!(seen[format!("echo{n}")], format!("call {n}"), "{seen}");
    }
    let asked = seen["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 3, "once, then for the session (calls 3 and 4 unasked), then pid: {seen}");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Warden asks: may `test__echo` (server 'test', medium risk) run? 'test__echo' is medium risk (Warden default)"
        ),
        "{message}"
    );
    assert!(message.ends_with("Arguments: {\"message\":\"call 1\"}"), "{message}");
    assert_eq!(asked[0]["choices"], json!(["once", "session", "minutes", "deny"]));
    assert!(asked[2]["message"].as_str().unwrap().starts_with("Warden asks: may `test__pid`"), "{seen}");
    assert_eq!(seen["pid_is_error"], true);
    let denied = seen["pid"].as_str().unwrap();
    assert!(denied.contains("denied by the client: not now"), "{denied}");
}

#[test]
fn a_server_asking_for_roots_during_a_clients_call_is_told_that_clients_own_and_no_one_elses() {
    let home = home(
        "asking-roots",
        &format!(
            "roots = [\"/srv/default\"]\n\n[front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n"
        ),
    );
    // Top-level `roots` must come before any table: move it to the top.
    let text = std::fs::read_to_string(&home.config).unwrap().replace("roots = [\"/srv/default\"]\n", "");
    std::fs::write(&home.config, format!("roots = [\"/srv/default\"]\n{text}")).unwrap();
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let url = format!("http://127.0.0.1:{}/mcp", common::bound_port(&status, "front"));
    let client = |roots: &str| {
        let (program, mut args) = python_server_command(&python_script("roots_client.py"));
        args.extend([url.clone(), TOKEN.to_string(), roots.to_string()]);
        let output = Command::new(program).args(&args).output().expect("the client runs");
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(output.status.success(), "the client failed: {stdout}\n{}", stderr(&output));
        serde_json::from_str::<Value>(stdout.lines().last().unwrap_or_default()).unwrap()
    };
    let with_roots = client(r#"["file:///client/a", "file:///client/b"]"#);
    assert_eq!(with_roots, json!({"roots": "file:///client/a\nfile:///client/b", "asked": 1}));
    let without = client("null");
    assert_eq!(without, json!({"roots": "file:///srv/default", "asked": 0}), "never the other client's roots");
}

#[test]
fn a_listed_servers_sampling_goes_to_the_calling_clients_model_and_nowhere_else() {
    let home = home("asking-sampling", "\n[sampling]\nservers = [\"py\"]\n");
    let sample = |offer: &str| {
        let (program, mut args) = python_server_command(&python_script("sample_client.py"));
        args.extend([
            offer.to_string(),
            env!("CARGO_BIN_EXE_warden").to_string(),
            warden_args(&home, &["mcp", "--no-daemon"]),
        ]);
        let output = Command::new(program).args(&args).env("WARDEN_HOME", &home.dir).output().expect("the client runs");
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(output.status.success(), "the client failed: {stdout}\n{}", stderr(&output));
        serde_json::from_str::<Value>(stdout.lines().last().unwrap_or_default()).unwrap()
    };
    assert_eq!(
        sample("with"),
        json!({"sampled": "client-model: client says: hi from the test", "seen": [{"maxTokens": 100, "text": "hi from the test"}]})
    );
    // No endpoint configured, and this client offers no model.
    let without = sample("without");
    assert_eq!(
        without["sampled"],
        "error: Warden has no model for this request: no [sampling] endpoint is configured and the calling client offers none"
    );
}
