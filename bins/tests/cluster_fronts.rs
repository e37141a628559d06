//! Front replicas: two `warden serve` nodes in one cluster (a real
//! `nats-server`), each with an HTTP front taking the same token, and a
//! client that alternates between them request by request, as one behind
//! a load balancer without sticky sessions does.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, Write as _};
use std::time::{Duration, Instant};

use common::front_client::{call, Http, TOKEN};
use common::Home;
use serde_json::{json, Value};
use warden_tests::nats::NatsServer;

/// Node `node` with its own copy of the test server, behind a front.
/// `echo` needs the client's approval; `notify` does not.
fn front_node(label: &str, node: &str, nats: &NatsServer) -> (Home, u16) {
    let home = Home::new(label);
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,notify\"]\n\n\
         [security.tool_policies.test__notify]\napproval = \"never\"\n\n\
         [front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n\n\
         [cluster]\nnats = [\"{}\"]\nnode = \"{node}\"\n",
        nats.url()
    );
    std::fs::write(&home.config, config).unwrap();
    // `status` starts the daemon.
    let port = home.front_port();
    (home, port)
}

/// Node B, the gateway: no servers of its own, a front taking [`TOKEN`],
/// auto-approving; returned once `tool` of another node is listed there.
fn gateway_front(label: &str, nats: &NatsServer, tool: &str) -> (Home, u16) {
    let b = Home::new(label);
    let config = format!(
        "[security]\nauto_approve = true\n[front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n\
         [cluster]\nnats = [\"{}\"]\nnode = \"b\"\n",
        nats.url()
    );
    std::fs::write(&b.config, config).unwrap();
    let port = b.front_port();
    let start = Instant::now();
    while !String::from_utf8_lossy(&b.warden(&["tools"]).stdout).contains(tool) {
        assert!(start.elapsed() < Duration::from_secs(60), "{tool} of another node never reached B");
        std::thread::sleep(Duration::from_millis(200));
    }
    (b, port)
}

/// A POST answered as JSON (the client takes no stream).
fn post(port: u16, session: &str, message: &Value) -> Value {
    let bearer = format!("Bearer {TOKEN}");
    let headers = [("Authorization", bearer.as_str()), ("Accept", "application/json"), ("Mcp-Session-Id", session)];
    Http::connect(port).send("POST", "/mcp", &headers, &message.to_string()).json()
}

/// Sends `request` raw and reads its SSE events' `data` until `count`
/// arrived; the connection, to read more later.
fn events(port: u16, request: &str, count: usize) -> (Http, Vec<(String, Value)>) {
    let mut http = Http::connect(port);
    http.reader.get_mut().write_all(request.as_bytes()).unwrap();
    let more = read_events(&mut http, count);
    (http, more)
}

/// The next `count` events (id, message) of a stream being read.
fn read_events(http: &mut Http, count: usize) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut id = String::new();
    let mut line = String::new();
    while found.len() < count {
        line.clear();
        assert!(http.reader.read_line(&mut line).unwrap() > 0, "the stream ended after {found:?}");
        if let Some(given) = line.trim_end().strip_prefix("id: ") {
            id = given.to_string();
        } else if let Some(data) = line.trim_end().strip_prefix("data: ") {
            found.push((id.clone(), serde_json::from_str(data).unwrap()));
        }
    }
    found
}

fn request(method: &str, port: u16, session: &str, extra: &str, body: &str) -> String {
    format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A 2026-07-28 `tools/call` of `tool` (declaring forms), with `extra`
/// params; its answer.
fn modern(port: u16, tool: &str, extra: Value) -> Value {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"}});
    let mut params = json!({"name": tool, "arguments": {"message": "modern"}, "_meta": meta});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Accept", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    Http::connect(port).send("POST", "/mcp", &headers, &body.to_string()).json()
}

/// The retry's params of a call answered `input_required` for an
/// approval: approved once.
fn approved(parked: &Value) -> Value {
    let result = &parked["result"];
    assert_eq!(result["resultType"], "input_required", "{parked}");
    let key = result["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    json!({"requestState": result["requestState"],
        "inputResponses": { key: {"action": "accept", "content": {"decision": "once"}} }})
}

#[test]
fn a_client_alternating_between_two_front_replicas_keeps_its_session_its_approvals_and_its_events() {
    let nats = NatsServer::start(&warden_tests::scratch_dir("cluster-fronts-nats"), "");
    let (_a, a) = front_node("cluster-fronts-a", "a", &nats);
    let (b_home, b) = front_node("cluster-fronts-b", "b", &nats);

    // initialize on a; every later request alternates.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}}, "clientInfo": {"name": "alternating", "version": "1"}}});
    let session = Http::connect(a).initialize_with("/mcp", TOKEN, &init).unwrap();
    let listed = post(b, &session, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"test__echo"), "b serves the session a made: {listed}");
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}});
    assert_eq!(post(a, &session, &level)["result"], json!({}));

    // A call on b asks the client's approval on b's stream; the answer
    // goes to a, which hands it to b.
    let echo = call(3, "test__echo", json!({"message": "approved through a"})).to_string();
    let (mut stream, asked) = events(b, &request("POST", b, &session, "", &echo), 1);
    assert_eq!(asked[0].1["method"], "elicitation/create", "{asked:?}");
    let answer = json!({"jsonrpc": "2.0", "id": asked[0].1["id"],
        "result": {"action": "accept", "content": {"decision": "session"}}});
    let reply = Http::connect(a).post("/mcp", TOKEN, Some(&session), &answer);
    assert_eq!(reply.status, 202, "{}", reply.body);
    let done = read_events(&mut stream, 1);
    assert_eq!(done[0].1["result"]["content"][0]["text"], "approved through a", "{done:?}");
    // Approved for the session: a runs the next one without asking.
    std::thread::sleep(Duration::from_millis(100));
    let unasked = post(a, &session, &call(4, "test__echo", json!({"message": "unasked on a"})));
    assert_eq!(unasked["result"]["content"][0]["text"], "unasked on a", "{unasked}");

    // An event on a's GET stream; the stream then moves to b, which says
    // what it cannot replay.
    let (mut on_a, _) = events(a, &request("GET", a, &session, "", ""), 0);
    std::thread::sleep(Duration::from_millis(300));
    post(a, &session, &call(5, "test__notify", json!({})));
    let heard = read_events(&mut on_a, 1);
    let last = heard[0].0.clone();
    drop(on_a);
    let (_on_b, said) = events(b, &request("GET", b, &session, &format!("Last-Event-ID: {last}\r\n"), ""), 2);
    assert_eq!(said[0].1["params"]["level"], "warning", "{said:?}");
    assert!(said[0].1["params"]["data"].as_str().unwrap().contains(&format!("after event {last}")), "{said:?}");
    assert_eq!(said[1].1["method"], "notifications/tools/list_changed", "{said:?}");

    // A 2026-07-28 client needs no session: either replica answers.
    for port in [a, b, a, b] {
        let reply = modern(port, "test__notify", json!({}));
        assert_eq!(reply["result"]["content"][0]["text"], "notified", "{reply}");
    }
    // Its call parked on a for the client's approval, retried on b: relayed to a.
    let parked = modern(a, "test__echo", json!({}));
    let retry = approved(&parked);
    let resumed = modern(b, "test__echo", retry);
    assert_eq!(resumed["result"]["content"][0]["text"], "modern", "{resumed}");

    // Ended on b: a's copy is gone within a second.
    let ended = Http::connect(b).send(
        "DELETE",
        "/mcp",
        &[("Authorization", &format!("Bearer {TOKEN}")), ("Mcp-Session-Id", &session)],
        "",
    );
    assert_eq!(ended.status, 204);
    let start = Instant::now();
    loop {
        let reply = Http::connect(a).post("/mcp", TOKEN, Some(&session), &call(6, "test__notify", json!({})));
        if reply.status == 404 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(1), "a still serves a session its client ended on b");
        std::thread::sleep(Duration::from_millis(20));
    }

    // A call parked on b, whose node then freezes (SIGSTOP: its NATS
    // connection stays, so the retry is delivered and never answered): its
    // retry on a is told once b's heartbeat lapses, not left waiting.
    let retry = approved(&modern(b, "test__echo", json!({})));
    let b_pid = b_home.daemon_pid().to_string();
    assert!(std::process::Command::new("kill").args(["-STOP", &b_pid]).status().unwrap().success());
    let start = Instant::now();
    let orphan = modern(a, "test__echo", retry);
    let waited = start.elapsed();
    let _ = std::process::Command::new("kill").args(["-KILL", &b_pid]).status();
    let problem = orphan["error"]["message"].as_str().unwrap_or_default();
    assert!(
        problem.contains("waits on front replica 'b', which could not answer")
            && problem.contains("call again without it"),
        "{orphan}"
    );
    assert!(waited < Duration::from_secs(5), "the retry waited {waited:?}");
}

#[test]
fn a_remote_servers_resources_and_prompts_are_served_through_a_gateways_front() {
    let nats = NatsServer::start(&warden_tests::scratch_dir("cluster-primitives-nats"), "");
    let a = Home::new("cluster-primitives-a");
    let (node_js, args) = warden_tests::real_servers::EVERYTHING.command(&[]);
    let config = format!(
        "[security]\nauto_approve = true\n[servers.everything]\ncommand = {node_js:?}\nargs = {args:?}\n\
         startup_timeout_secs = 60\n[cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"everything\"]\n",
        nats.url()
    );
    std::fs::write(&a.config, config).unwrap();
    assert!(a.warden(&["status"]).status.success());
    let b = Home::new("cluster-primitives-b");
    let config = format!(
        "[front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n\
         [cluster]\nnats = [\"{}\"]\nnode = \"b\"\n",
        nats.url()
    );
    std::fs::write(&b.config, config).unwrap();
    let port = b.front_port();
    let session = Http::connect(port).initialize("/mcp", TOKEN).unwrap();
    let request = |id: u64, method: &str, params: Value| {
        post(port, &session, &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    };
    // Listed through B (after A's server is attached there).
    let instructions = "warden://everything/demo://resource/static/document/instructions.md";
    let start = Instant::now();
    loop {
        let listed = request(1, "resources/list", json!({}));
        let uris: Vec<&str> =
            listed["result"]["resources"].as_array().into_iter().flatten().filter_map(|r| r["uri"].as_str()).collect();
        if uris.contains(&instructions) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "A's resources never listed on B: {listed}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let read = request(2, "resources/read", json!({"uri": instructions}));
    let text = read["result"]["contents"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, warden_tests::real_servers::everything_doc("instructions.md"), "{read}");
    assert_eq!(read["result"]["contents"][0]["uri"], instructions, "{read}");
    let prompts = request(3, "prompts/list", json!({}));
    let names: Vec<&str> =
        prompts["result"]["prompts"].as_array().into_iter().flatten().filter_map(|p| p["name"].as_str()).collect();
    assert!(names.contains(&"everything__args-prompt"), "{prompts}");
    let prompt = request(
        4,
        "prompts/get",
        json!({"name": "everything__args-prompt", "arguments": {"city": "Paris", "state": "Texas"}}),
    );
    assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "What's weather in Paris, Texas?", "{prompt}");
    // A subscription is held on the node that runs the server.
    let subscribed = request(5, "resources/subscribe", json!({"uri": instructions}));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
}

#[test]
fn a_remote_servers_resource_updates_and_list_changes_reach_the_gateways_front_clients() {
    use warden_tests::real_servers::{python_script, python_server_command};
    let nats = NatsServer::start(&warden_tests::scratch_dir("cluster-updates-nats"), "");
    // A runs the Python SDK's era server (both eras: A speaks 2026-07-28
    // to it, subscribing through `subscriptions/listen`).
    let a = Home::new("cluster-updates-a");
    let (python, mut args) = python_server_command(&python_script("era_server.py"));
    args.push("dual".into());
    let config = format!(
        "[servers.era]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\n\
         [cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"era\"]\n",
        nats.url()
    );
    std::fs::write(&a.config, config).unwrap();
    assert!(a.warden(&["status"]).status.success());
    // B is the gateway: the Python SDK's client uses its front.
    let (b, port) = gateway_front("cluster-updates-b", &nats, "era__touch");
    let (program, mut args) = python_server_command(&python_script("updates_client.py"));
    args.extend([format!("http://127.0.0.1:{port}/mcp"), TOKEN.to_string(), "era".to_string()]);
    let seen = b.client_json(&program, &args);
    let note = "warden://era/note://current";
    let updated = seen["updated"].as_array().cloned().unwrap_or_default();
    assert!(!updated.is_empty() && updated.iter().all(|uri| uri == note), "the update on A reached B's client: {seen}");
    assert_eq!(seen["list_changed"], true, "{seen}");
    let listed = seen["listed"].as_array().cloned().unwrap_or_default();
    assert!(listed.contains(&json!("warden://era/note://fresh")), "the new resource is listed: {seen}");
    assert_eq!(seen["after_unsubscribe"], json!([]), "no update after unsubscribing: {seen}");
}

#[test]
fn a_remote_servers_questions_are_asked_of_the_client_whose_call_it_is_on_the_node_it_entered_at() {
    use warden_tests::real_servers::{python_script, python_server_command};
    let nats = NatsServer::start(&warden_tests::scratch_dir("cluster-asking-nats"), "");
    // A runs the Python SDK's asking server and exports it.
    let a = common::cluster::asking_node("cluster-asking-a", &nats);
    assert!(a.warden(&["status"]).status.success());
    // B is the gateway; the Python SDK's client, which answers questions, uses B's front.
    let (b, port) = gateway_front("cluster-asking-b", &nats, "py__book_table");
    let (program, mut args) = python_server_command(&python_script("ask_client.py"));
    args.extend(["http".to_string(), format!("http://127.0.0.1:{port}/mcp"), TOKEN.to_string()]);
    let seen = b.client_json(&program, &args);
    // The server on A asked; the client on B answered; nothing waited in a queue.
    assert_eq!(seen["booked"], "booked Ada small 4", "the client's answer, with the name's default: {seen}");
    assert_eq!(seen["signed"], "url accept", "{seen}");
    assert_eq!(seen["asked"][0]["message"], "Book a table for how many nights?", "{seen}");
    assert_eq!(seen["asked"][1]["url"], "https://login.example.com/auth?x=1", "{seen}");
    for home in [&a, &b] {
        let pending = String::from_utf8_lossy(&home.warden(&["pending"]).stdout).to_string();
        assert_eq!(pending, "nothing is waiting for a person\n");
    }
}

#[test]
fn a_question_the_remote_server_gives_up_on_is_withdrawn_from_the_client_on_the_entering_node() {
    let nats = NatsServer::start(&warden_tests::scratch_dir("cluster-give-up-nats"), "");
    let a = common::cluster::asking_node("cluster-give-up-a", &nats);
    assert!(a.warden(&["status"]).status.success());
    let (_b, port) = gateway_front("cluster-give-up-b", &nats, "py__give_up");
    // A client that answers forms, but is slow to: the server on A gives
    // up on its question after a second and goes on with the call.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "slow", "version": "1"}}});
    let session = Http::connect(port).initialize_with("/mcp", TOKEN, &initialize).unwrap();
    let body = call(1, "py__give_up", json!({})).to_string();
    let extra = "Content-Type: application/json\r\n";
    let (mut stream, first) = events(port, &request("POST", port, &session, extra, &body), 1);
    let asked_at = Instant::now();
    let asked = &first[0].1;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let withdrawn = read_events(&mut stream, 1).remove(0).1;
    let withdrawn_after = asked_at.elapsed();
    assert_eq!(withdrawn["method"], "notifications/cancelled", "{withdrawn}");
    assert_eq!(withdrawn["params"]["requestId"], asked["id"], "the question asked is the one withdrawn: {withdrawn}");
    assert!(
        withdrawn_after < Duration::from_millis(1900),
        "withdrawn when the server gave up (after 1 s), not when the call ended (after 3 s): {withdrawn_after:?}"
    );
    let result = read_events(&mut stream, 1).remove(0).1;
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "gave up", "{result}");
}
