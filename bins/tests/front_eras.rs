//! The front serving MCP 2026-07-28 clients alongside `initialize`-era
//! ones, on the same endpoints: the official Python SDK client pinned to
//! each era, over `warden mcp` (stdio) and the daemon's HTTP front, each
//! reaching a 2026-07-28-only server and an `initialize`-only one behind
//! Warden (both the Python SDK, `tests/python/era_server.py`). And what a
//! client that gets the envelope wrong meets (raw HTTP).

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use common::{stderr, Home};
use serde_json::{json, Value};
use warden_tests::real_servers::{python_script, python_server_command};

const TOKEN: &str = "front-token-0123456789abcdef";
const OTHER_TOKEN: &str = "other-token-0123456789abcdef";

/// A home with the era servers `modern` and `legacy` and an HTTP front on
/// a port of the daemon's choosing; its daemon started. The home and that
/// port.
fn home(label: &str) -> (Home, u16) {
    let home = Home::new(label);
    let (python, args) = python_server_command(&python_script("era_server.py"));
    let mut text = String::from("[security]\nauto_approve = true\n");
    for era in ["modern", "legacy"] {
        let mut args = args.clone();
        args.push(era.to_string());
        text += &format!("\n[servers.{era}]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\n");
    }
    text += &format!(
        "\n[front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}, {{ token = \"{OTHER_TOKEN}\" }}]\n"
    );
    std::fs::write(&home.config, text).unwrap();
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let port = common::bound_port(&status, "front");
    (home, port)
}

/// Runs `era_client.py MODE TRANSPORT TARGET EXTRA`; the JSON it printed.
fn run_client(home: &Home, mode: &str, transport: &str, target: &str, extra: &str) -> Value {
    let (program, mut args) = python_server_command(&python_script("era_client.py"));
    args.extend([mode, transport, target, extra].map(str::to_string));
    home.client_json(&program, &args)
}

/// What every client sees, whatever its era and transport.
fn assert_served(seen: &Value, version: &str) {
    assert_eq!(seen["version"], version, "{seen}");
    assert_eq!(seen["server"], "warden", "{seen}");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for tool in ["modern__echo", "modern__whoami", "legacy__echo", "legacy__grow"] {
        assert!(tools.contains(&tool), "{tool} missing: {seen}");
    }
    assert_eq!(seen["echo"], json!(["modern", "legacy"]), "{seen}");
    assert_eq!(seen["eras"], json!(["modern", "legacy"]), "each server in its own era: {seen}");
    assert_eq!(seen["whoami"], json!(["hello Ada", "hello Ada"]), "each server's question reached the client: {seen}");
    assert_eq!(seen["late"], true, "the new tool is listed: {seen}");
}

#[test]
fn clients_of_both_eras_reach_servers_of_both_eras_over_stdio_and_http() {
    let (home, port) = home("front-eras");
    let warden = env!("CARGO_BIN_EXE_warden");
    let url = format!("http://127.0.0.1:{port}/mcp");
    for transport in ["stdio", "http"] {
        let (target, extra) = match transport {
            "stdio" => (warden.to_string(), json!(["mcp", "--config", home.config]).to_string()),
            _ => (url.clone(), TOKEN.to_string()),
        };
        let modern = run_client(&home, "auto", transport, &target, &extra);
        assert_served(&modern, "2026-07-28");
        assert_eq!(modern["honored"], true, "{transport}: {modern}");
        assert_eq!(modern["changed"], "ToolsListChanged", "the change came on the subscription: {modern}");
        assert_eq!(modern["logs"], json!(["modern shouts"]), "the call's own log, on its stream: {modern}");
        let legacy = run_client(&home, "legacy", transport, &target, &extra);
        assert_served(&legacy, "2025-11-25");
        assert_eq!(legacy["logs"], json!(["legacy shouts", "modern shouts"]), "each server's log: {legacy}");
        assert_eq!(legacy["updated"], json!(["warden://modern/note://current"]), "{legacy}");
        assert_eq!(legacy["changed"], true, "{transport}: {legacy}");
    }
}

/// POSTs `body` with `headers` to the front; status and body.
fn post(port: u16, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    post_as(TOKEN, port, headers, body)
}

/// [`post`] with another bearer token.
fn post_as(token: &str, port: u16, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request += &format!("{name}: {value}\r\n");
    }
    request += "\r\n";
    request += &body;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).unwrap().parse().unwrap();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body.trim()).unwrap_or(Value::Null))
}

/// GETs `/metrics` from the front (it needs the bearer token).
fn get_metrics(port: u16) -> (u16, String) {
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).unwrap().parse().unwrap();
    (status, answer.split("\r\n\r\n").nth(1).unwrap_or_default().to_string())
}

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn envelope(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version,
           "io.modelcontextprotocol/clientCapabilities": {},
           "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}})
}

#[test]
fn a_2026_request_gets_what_the_revision_says_for_each_mistake() {
    let (_home, port) = home("front-eras-raw");
    let modern = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "server/discover")];

    // Discovery, without a session.
    let (status, answer) = post(port, &modern, &request("server/discover", json!({"_meta": envelope("2026-07-28")})));
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["supportedVersions"][0], "2026-07-28", "{answer}");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "warden");
    assert!(result["capabilities"]["tools"].is_object(), "{answer}");

    // A version the front does not speak: 400, -32022 with what it speaks.
    let old = [("MCP-Protocol-Version", "2027-01-01"), ("Mcp-Method", "server/discover")];
    let (status, answer) = post(port, &old, &request("server/discover", json!({"_meta": envelope("2027-01-01")})));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32022);
    assert_eq!(answer["error"]["data"]["supported"][0], "2026-07-28", "{answer}");

    // Headers that do not mirror the body: 400, -32020.
    let call = request(
        "tools/call",
        json!({"name": "modern__echo", "arguments": {"message": "x"}, "_meta": envelope("2026-07-28")}),
    );
    let lying = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "legacy__echo")];
    let (status, answer) = post(port, &lying, &call);
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("Mcp-Name"), "{answer}");

    // The same call with honest headers works, without a session.
    let honest = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "modern__echo")];
    let (status, answer) = post(port, &honest, &call);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "x", "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete");

    // A log level that is not one: -32602, naming the levels.
    let mut loud = call.clone();
    loud["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
    let (_, answer) = post(port, &honest, &loud);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("\"loud\", which is not a log level"), "{answer}");

    // No client capabilities: 400, -32602.
    let bare = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let (status, answer) = post(port, &modern, &request("server/discover", json!({"_meta": bare})));
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");

    // A method 2026-07-28 removed: 404, -32601, saying what replaced it.
    let ping = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "ping")];
    let (status, answer) = post(port, &ping, &request("ping", json!({"_meta": envelope("2026-07-28")})));
    assert_eq!(status, 404, "{answer}");
    assert_eq!(answer["error"]["code"], -32601);
}

#[test]
fn a_question_to_a_2026_client_is_an_input_required_answer_whose_state_cannot_be_forged_moved_or_reused() {
    let (_home, port) = home("front-eras-state");
    let headers =
        [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "legacy__whoami")];
    let mut meta = envelope("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    let call = |extra: Value| {
        let mut params = json!({"name": "legacy__whoami", "arguments": {}, "_meta": meta.clone()});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        request("tools/call", params)
    };

    // The server asks the person's name: the client is told so, not sent a request.
    let (status, answer) = post(port, &headers, &call(json!({})));
    assert_eq!(status, 200, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let (key, asked) = result["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{answer}");
    assert_eq!(asked["params"]["message"], "What is your name?");
    let state = result["requestState"].as_str().unwrap().to_string();
    let responses = json!({ key.clone(): {"action": "accept", "content": {"name": "Ada"}} });

    // An altered state, a state moved to another call or another client: refused, the call still waits.
    let mut altered = state.clone().into_bytes();
    altered[3] = if altered[3] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let refusals = [
        (TOKEN, call(json!({"requestState": altered, "inputResponses": responses})), "not made by this front"),
        (
            TOKEN,
            {
                let mut other = call(json!({"requestState": state, "inputResponses": responses}));
                other["params"]["arguments"] = json!({"who": "someone else"});
                other
            },
            "belongs to another call",
        ),
        (OTHER_TOKEN, call(json!({"requestState": state, "inputResponses": responses})), "another client's call"),
    ];
    for (token, retry, expected) in refusals {
        let (status, answer) = post_as(token, port, &headers, &retry);
        assert_eq!(status, 400, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(expected), "{expected}: {answer}");
    }

    // No session was opened for any of this; an `initialize` opens one.
    let (_, metrics) = get_metrics(port);
    assert!(metrics.contains("warden_front_sessions 0\n"), "{metrics}");
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}});
    let (status, answer) = post(port, &[], &request("initialize", init));
    assert_eq!(status, 200, "{answer}");
    let (_, metrics) = get_metrics(port);
    assert!(metrics.contains("warden_front_sessions 1\n"), "{metrics}");

    // The client's own retry resumes the call, once.
    let retry = call(json!({"requestState": state, "inputResponses": responses}));
    let (status, answer) = post(port, &headers, &retry);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "hello Ada", "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete");
    let (status, answer) = post(port, &headers, &retry);
    assert_eq!(status, 400, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("no longer waiting"), "{answer}");
}
