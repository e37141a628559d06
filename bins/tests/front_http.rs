//! The daemon's Streamable HTTP front against the official TypeScript and
//! Python SDK clients, its refusals as a hostile or confused client meets
//! them (raw HTTP), and 50 sessions × 100 calls with a server crashing in
//! the middle: every call answered once, to its own caller.

#![allow(unused_crate_dependencies)]

mod common;

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::{stderr, Home};
use serde_json::{json, Value};
use warden_tests::{bins, real_servers};

const TOKEN: &str = "front-token-0123456789abcdef";
const CODER_TOKEN: &str = "coder-token-0123456789abcdef";

/// A free loopback port (taken and released: the daemon binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A home whose daemon runs the test server (and, with `everything`,
/// server-everything) behind an HTTP front; the daemon is started.
fn front_home(label: &str, everything: bool, front_extra: &str) -> (Home, u16) {
    let home = Home::new(label);
    let port = free_port();
    let mut text = format!(
        "[security]\nauto_approve = true\n\n[servers.test]\ncommand = {:?}\n\
         args = [\"--tools\", \"echo,sleep,notify,cancellations,crash\"]\nrestart_delay_secs = 0.2\n",
        bins::test_server().display().to_string()
    );
    if everything {
        let (node, args) = real_servers::EVERYTHING.command(&[]);
        text += &format!("\n[servers.everything]\ncommand = {node:?}\nargs = {args:?}\n");
    }
    text += &format!(
        "\n[[agents]]\nname = \"coder\"\nallowed_tools = [\"test__echo\"]\n\n[front]\nlisten = \"127.0.0.1:{port}\"\n\
         tokens = [{{ token = \"{TOKEN}\" }}, {{ token = \"{CODER_TOKEN}\", agent = \"coder\" }}]\n{front_extra}"
    );
    std::fs::write(&home.config, text).unwrap();
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    (home, port)
}

/// One answer: status, headers (lower-case names), body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A keep-alive HTTP/1.1 connection speaking just enough to test the front.
struct Http {
    reader: BufReader<TcpStream>,
    port: u16,
    /// The last answer said `Connection: close`: the next request reconnects.
    closed: bool,
}

impl Http {
    fn connect(port: u16) -> Http {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Http { reader: BufReader::new(stream), port, closed: false }
    }

    fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        if self.closed {
            *self = Http::connect(self.port);
        }
        let mut request = format!("{method} {path} HTTP/1.1\r\nContent-Length: {}\r\n", body.len());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
            request += &format!("Host: 127.0.0.1:{}\r\n", self.port);
        }
        for (name, value) in headers {
            request += &format!("{name}: {value}\r\n");
        }
        request += "\r\n";
        let stream = self.reader.get_mut();
        stream.write_all(request.as_bytes()).unwrap();
        // A refused body may be cut off by the server: its answer is read anyway.
        if let Err(error) = stream.write_all(body.as_bytes()) {
            eprintln!("writing the body of {method} {path} failed: {error}");
        }
        self.read_reply()
    }

    fn read_reply(&mut self) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).unwrap_or_else(|| panic!("no status line: {line:?}")).parse().unwrap();
        let mut headers = HashMap::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let Some((name, value)) = line.trim_end().split_once(':') else { break };
            headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
        }
        let length: usize = headers.get("content-length").map_or(0, |length| length.parse().unwrap());
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        self.closed = headers.get("connection").is_some_and(|value| value == "close");
        Reply { status, headers, body: String::from_utf8(body).unwrap() }
    }

    /// A POST of one JSON-RPC message with the bearer `token`.
    fn post(&mut self, path: &str, token: &str, session: Option<&str>, message: &Value) -> Reply {
        let bearer = format!("Bearer {token}");
        let mut headers = vec![("Authorization", bearer.as_str()), ("Accept", "application/json, text/event-stream")];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        self.send("POST", path, &headers, &message.to_string())
    }

    /// `initialize` on `path`; the session id.
    fn initialize(&mut self, path: &str, token: &str) -> Result<String, Reply> {
        let message = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let reply = self.post(path, token, None, &message);
        match reply.headers.get("mcp-session-id") {
            Some(id) if reply.status == 200 => Ok(id.clone()),
            _ => Err(reply),
        }
    }
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

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
