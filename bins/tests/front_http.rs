//! The daemon's Streamable HTTP front against the official TypeScript and
//! Python SDK clients, its refusals as a hostile or confused client meets
//! them (raw HTTP), and 50 sessions × 100 calls with a server crashing in
//! the middle: every call answered once, to its own caller.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::Write as _;
use std::process::Command;
use std::time::Duration;

use common::front_client::{call, front_home, Http, CODER_TOKEN, TOKEN};
use common::{stderr, stdout};
use serde_json::{json, Value};
use warden_tests::real_servers;

fn run_client((program, mut args): (String, Vec<String>), port: u16) -> Value {
    args.extend(["http".to_string(), format!("http://127.0.0.1:{port}/mcp"), TOKEN.to_string()]);
    let output = Command::new(program).args(&args).output().expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "the client failed: {stdout}\n{}", stderr(&output));
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not the client's JSON ({e}): {stdout}\n{}", stderr(&output)))
}

#[test]
fn the_sdk_clients_use_every_feature_over_the_http_front() {
    let (_home, port) = front_home("front-http-sdk", true, "");
    let ts = run_client(real_servers::node_script("front_client.mjs"), port);
    let python = run_client(real_servers::python_server_command(&real_servers::python_script("front_client.py")), port);
    for seen in [&ts, &python] {
        assert_eq!(seen["server"], "warden");
        assert_eq!(seen["echo"], "Echo: hi");
        assert!(seen["resource_uri"].as_str().unwrap().starts_with("warden://everything/demo://"), "{seen}");
        assert_eq!(seen["read_uri"], seen["resource_uri"]);
        assert_eq!(seen["prompt_messages"], 1);
        assert_eq!(seen["progress"], 3, "progress on the POST's SSE stream: {seen}");
        assert_eq!(seen["notify"], "notified");
        assert_eq!(seen["loggers"], json!(["test"]), "log messages on the GET stream: {seen}");
    }
    assert_eq!(ts["completion"], json!(["Engineering"]));
    assert_eq!(ts["cancel"], "aborted");
    let cancellations = ts["cancellations"].as_str().unwrap();
    assert!(cancellations.starts_with("cancelled: ") && cancellations != "cancelled: none", "{cancellations}");
    assert!(ts["tool_changes"].as_u64().unwrap() >= 1, "{ts}");
    assert_eq!(ts["late_tool_listed"], true);
}

#[test]
fn the_http_front_refuses_what_it_must_and_says_why() {
    let (home, port) = front_home("front-http-refusals", false, "max_sessions = 3\n");
    let mut http = Http::connect(port);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});

    let no_token = http.send("POST", "/mcp", &[("Accept", "application/json")], &ping.to_string());
    assert_eq!(no_token.status, 401);
    assert_eq!(no_token.headers["www-authenticate"], "Bearer realm=\"warden\"");
    assert_eq!(http.post("/mcp", "wrong-token-0123456789abcdef", None, &ping).status, 401);

    let bearer = format!("Bearer {TOKEN}");
    let accept = ("Accept", "application/json, text/event-stream");
    let auth = ("Authorization", bearer.as_str());
    let foreign = http.send("POST", "/mcp", &[auth, accept, ("Origin", "https://evil.example")], &ping.to_string());
    assert_eq!(foreign.status, 403);
    assert!(foreign.json()["error"]["message"].as_str().unwrap().contains("allowed_origins"), "{}", foreign.body);
    // A page the front served itself is same-origin; another port or name is not.
    let own = format!("http://127.0.0.1:{port}");
    let same = http.send("POST", "/mcp", &[auth, accept, ("Origin", own.as_str())], &ping.to_string());
    // Past the Origin check, it is refused for the next thing it lacks: a session.
    assert_eq!(same.status, 400, "{}", same.body);
    assert!(same.body.contains("Mcp-Session-Id"), "{}", same.body);
    for other in [
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{}", port + 1),
        format!("https://127.0.0.1:{port}"),
    ] {
        let cross = http.send("POST", "/mcp", &[auth, accept, ("Origin", other.as_str())], &ping.to_string());
        assert_eq!(cross.status, 403, "{other}: {}", cross.body);
    }
    let rebound = http.send("POST", "/mcp", &[auth, accept, ("Host", &format!("evil.example:{port}"))], "{}");
    assert_eq!(rebound.status, 421);
    let version = http.send("POST", "/mcp", &[auth, accept, ("MCP-Protocol-Version", "1999-01-01")], "{}");
    assert_eq!(version.status, 400);
    assert_eq!(http.send("PUT", "/mcp", &[auth], "").status, 405);
    assert_eq!(http.send("GET", "/nothing", &[auth], "").status, 404);

    // A token bound to agent `coder` may not act as another agent.
    let other = http.initialize("/mcp/agents/someone", CODER_TOKEN).unwrap_err();
    assert_eq!(other.status, 403, "{}", other.body);
    // Its own view shows only its allowlist.
    let coder = http.initialize("/mcp", CODER_TOKEN).unwrap();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let tools = http.post("/mcp", CODER_TOKEN, Some(&coder), &list).json();
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 1, "{tools}");
    assert_eq!(tools["result"]["tools"][0]["name"], "test__echo");
    // Another token cannot ride the coder's session.
    assert_eq!(http.post("/mcp", TOKEN, Some(&coder), &list).status, 404);

    assert_eq!(http.post("/mcp", TOKEN, None, &ping).status, 400, "no session id");
    let unknown = http.post("/mcp", TOKEN, Some("0123"), &ping);
    assert_eq!(unknown.status, 404);
    let session = http.initialize("/mcp", TOKEN).unwrap();
    assert_eq!(http.post("/mcp", TOKEN, Some(&session), &ping).json()["result"], json!({}));

    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(17 * 1024 * 1024));
    let mut big = Http::connect(port);
    let too_large = big.send("POST", "/mcp", &[auth, accept, ("Mcp-Session-Id", &session)], &huge);
    assert_eq!(too_large.status, 413, "{}", too_large.body);

    let get = http.send("GET", "/mcp", &[auth, ("Accept", "application/json"), ("Mcp-Session-Id", &session)], "");
    assert_eq!(get.status, 406);

    // The cap: three sessions, a fourth is refused until one ends.
    let third = http.initialize("/mcp/servers/test", TOKEN).unwrap();
    let refused = http.initialize("/mcp", TOKEN).unwrap_err();
    assert_eq!(refused.status, 503);
    assert!(refused.json()["error"]["message"].as_str().unwrap().contains("max_sessions"), "{}", refused.body);
    let deleted = http.send("DELETE", "/mcp/servers/test", &[auth, ("Mcp-Session-Id", &third)], "");
    assert_eq!(deleted.status, 204);
    assert_eq!(http.post("/mcp/servers/test", TOKEN, Some(&third), &ping).status, 404);
    let fourth = http.initialize("/mcp/servers/test", TOKEN).unwrap();
    // One server under its own names.
    let own = http.post("/mcp/servers/test", TOKEN, Some(&fourth), &call(3, "echo", json!({"message": "own"})));
    assert_eq!(own.json()["result"]["content"][0]["text"], "own");

    let status: Value = serde_json::from_slice(&home.warden(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["daemon"]["front"]["sessions"], 3, "{status}");
    // A person sees where the front listens (a port the system chose).
    let said = stdout(&home.warden(&["status"]));
    let front = format!("\n  MCP front: http://127.0.0.1:{port}/mcp, 3 sessions\n");
    assert!(said.lines().next().unwrap().starts_with("daemon: pid ") && said.contains(&front), "{said}");
}

#[test]
fn fifty_sessions_making_a_hundred_calls_each_through_a_crash_get_their_own_answers() {
    let (_home, port) = front_home("front-http-load", false, "");
    let clients: Vec<_> = (0..50)
        .map(|client| {
            std::thread::spawn(move || {
                let mut http = Http::connect(port);
                let session = http.initialize("/mcp", TOKEN).unwrap_or_else(|reply| panic!("{}", reply.body));
                let mut outcomes = (0, 0);
                for n in 0..100u64 {
                    if client == 7 && n == 50 {
                        // The server dies under everyone's calls.
                        let crash = http.post("/mcp", TOKEN, Some(&session), &call(9_999, "test__crash", json!({})));
                        assert_eq!(crash.status, 200);
                    }
                    let message = format!("client {client} call {n}");
                    let reply =
                        http.post("/mcp", TOKEN, Some(&session), &call(n, "test__echo", json!({"message": message})));
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    let answer = reply.json();
                    assert_eq!(answer["id"], n, "an answer to another request: {answer}");
                    let result = &answer["result"];
                    if result["isError"] == true {
                        // In flight when the server died: said so, never another's answer.
                        let text = result["content"][0]["text"].as_str().unwrap();
                        assert!(text.contains("crashed") || text.contains("went away"), "{text}");
                        outcomes.1 += 1;
                    } else {
                        assert_eq!(result["content"][0]["text"], message.as_str());
                        outcomes.0 += 1;
                    }
                }
                outcomes
            })
        })
        .collect();
    let (mut answered, mut failed) = (0, 0);
    for client in clients {
        let (ok, crashed) = client.join().expect("a client thread");
        answered += ok;
        failed += crashed;
    }
    assert_eq!(answered + failed, 5_000, "every call answered once");
    assert!(failed <= 50, "only calls in flight at the crash may fail: {failed}");
    eprintln!(
        "50 sessions x 100 calls through a crash: {answered} answered, {failed} failed saying the server crashed"
    );
}

#[test]
fn a_client_that_leaves_mid_call_cancels_the_call_upstream() {
    let (_home, port) = front_home("front-http-leave", false, "");
    let mut leaving = Http::connect(port);
    let session = leaving.initialize("/mcp", TOKEN).unwrap();
    let sleep = call(1, "test__sleep", json!({"ms": 20_000}));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nAccept: application/json\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n{sleep}",
        sleep.to_string().len()
    );
    leaving.reader.get_mut().write_all(request.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    drop(leaving);

    let mut http = Http::connect(port);
    let session = http.initialize("/mcp", TOKEN).unwrap();
    let mut heard = String::new();
    for attempt in 0..50 {
        let reply = http.post("/mcp", TOKEN, Some(&session), &call(attempt, "test__cancellations", json!({})));
        heard = reply.json()["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
        if heard.starts_with("cancelled: ") && heard != "cancelled: none" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(heard.starts_with("cancelled: ") && heard != "cancelled: none", "the server heard no cancel: {heard}");
}

#[test]
fn an_idle_session_expires_and_the_client_can_start_again() {
    let (_home, port) = front_home("front-http-expiry", false, "session_idle_secs = 0.5\n");
    let mut http = Http::connect(port);
    let session = http.initialize("/mcp", TOKEN).unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(http.post("/mcp", TOKEN, Some(&session), &ping).status, 200);
    std::thread::sleep(Duration::from_millis(1_500));
    let expired = http.post("/mcp", TOKEN, Some(&session), &ping);
    assert_eq!(expired.status, 404, "{}", expired.body);
    let again = http.initialize("/mcp", TOKEN).unwrap();
    assert_eq!(http.post("/mcp", TOKEN, Some(&again), &ping).status, 200);
}
