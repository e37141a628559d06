//! The daemon's audit log: one record per call with who decided and what
//! leak policing did, never a secret's value, rotated by size, and read
//! back by `warden audit`.

#![allow(unused_crate_dependencies)]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{mode, stderr, stdout, Home};
use serde_json::{json, Value};

const SECRET: &str = "audit-secret-value-4242";

/// The test server with a secret in its environment; `echo` runs without
/// approval, `add` needs a person; records rotate past `max_mb`.
fn home(label: &str, max_mb: f64) -> Home {
    let home = Home::new(label);
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[servers.test]\ncommand = {server:?}\nenv = {{ TOKEN = \"{SECRET}\" }}\n\
         default_policy = {{ approval = \"never\" }}\n\
         [security.tool_policies.test__add]\napproval = \"always\"\n\
         [audit]\nmax_mb = {max_mb}\nfiles = 2\n"
    );
    std::fs::write(&home.config, config).unwrap();
    home
}

/// Every record `warden audit --json` shows once `ready` holds of them
/// (records reach the file within 100 ms of their call), with these extra
/// arguments.
fn audit_when(home: &Home, extra: &[&str], ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let records = audit(home, extra);
        if ready(&records) || Instant::now() > deadline {
            return records;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every record `warden audit --json` shows, with these extra arguments.
fn audit(home: &Home, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["audit", "--json"];
    args.extend_from_slice(extra);
    let output = home.command(&args).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str::<Vec<Value>>(&stdout(&output)).unwrap()
}

/// Answers the next approval with `verb` (`approve` or `deny`).
fn answer_next_approval(home: &Home, verb: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed: Value = serde_json::from_str(&stdout(&home.warden(&["approvals", "--json"]))).unwrap();
        if let Some(id) = listed["approvals"][0]["id"].as_u64() {
            let mut args = vec![verb.to_string(), id.to_string()];
            if verb == "deny" {
                args.extend(["--reason".into(), "not today".into()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            assert!(home.warden(&args).status.success());
            return;
        }
        assert!(Instant::now() < deadline, "no approval came");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn each_call_is_recorded_with_its_decision_and_leaks_and_no_secret_value() {
    let home = home("audit", 10.0);
    home.start_daemon();
    // A person approves one call of `add` and denies the next.
    for verb in ["approve", "deny"] {
        let call = home
            .command(&["call", "test__add", r#"{"a":1,"b":2}"#, "--config"])
            .arg(&home.config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        answer_next_approval(&home, verb);
        call.wait_with_output().unwrap();
    }
    // A secret in the arguments stops the call; one in the result is redacted.
    let blocked = home.warden(&["call", "test__echo", &json!({"message": SECRET}).to_string()]);
    assert_eq!(blocked.status.code(), Some(1));
    assert_eq!(home.call("test__env", r#"{"name":"TOKEN"}"#), "[REDACTED:TOKEN]");

    let records = audit_when(&home, &[], |records| records.len() >= 5);
    let outcomes: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|record| {
            let tool = record["tool"].as_str().unwrap();
            (tool, record["outcome"].as_str().unwrap(), record["decision"]["kind"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("test__echo", "ok", "not_needed"),
            ("test__add", "ok", "approved"),
            ("test__add", "denied", "denied"),
            ("test__echo", "blocked", "blocked"),
            ("test__env", "ok", "not_needed"),
        ]
    );
    assert_eq!(records[1]["decision"]["by"], "a person over the bridge (warden approve/deny)");
    assert_eq!(records[2]["decision"]["reason"], "not today");
    assert_eq!(records[1]["policy"]["approval"]["value"], "always", "{}", records[1]);
    assert_eq!(records[1]["via"], "bridge");
    assert_eq!(records[1]["server"], "test");
    // Arguments are a digest: SHA-256 of `{"a":1,"b":2}`.
    assert_eq!(records[1]["arguments_sha256"], sha256_hex(r#"{"a":1,"b":2}"#));
    assert!(records[1].get("arguments").is_none());
    assert_eq!(records[3]["leaks"], json!([{"kind": "TOKEN", "pointer": "/message", "action": "blocked"}]));
    assert_eq!(records[4]["leaks"][0]["action"], "redacted");
    let file = home.dir.join("audit.jsonl");
    assert_eq!(mode(&file), 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(SECRET), "a secret's value is in the audit log:\n{text}");

    // Filters, and the text for people.
    assert_eq!(audit(&home, &["--tool", "test__a*"]).len(), 2);
    assert_eq!(audit(&home, &["--since", "1h"]).len(), 5);
    let output = home.command(&["audit", "--tool", "test__add"]).output().unwrap();
    let shown = stdout(&output);
    assert!(shown.contains("test__add  denied"), "{shown}");
    assert!(shown.contains("denied by a person over the bridge (warden approve/deny): not today  (bridge)"), "{shown}");
    let _ = home.warden(&["stop"]);
}

#[test]
fn the_audit_log_rotates_by_size_and_is_read_back_oldest_first() {
    // About 1 KiB a file: a few records each.
    let home = home("audit-rotation", 0.001);
    home.start_daemon();
    for n in 0..12 {
        home.call("test__echo", &format!(r#"{{"message":"m{n}"}}"#));
    }
    // Records are written, and the file rotated, by the daemon's flusher
    // within 100 ms of their calls.
    let newest = sha256_hex(r#"{"message":"m11"}"#);
    let records =
        audit_when(&home, &[], |records| records.last().is_some_and(|last| last["arguments_sha256"] == newest));
    assert!(home.dir.join("audit.jsonl.1").exists());
    assert!(home.dir.join("audit.jsonl.2").exists());
    assert!(!home.dir.join("audit.jsonl.3").exists(), "files = 2 keeps two rotated files");
    let times: Vec<f64> = records.iter().map(|record| record["time"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "not oldest first: {times:?}");
    // The newest call is there; the oldest ones went with the third file.
    assert_eq!(records.last().unwrap()["arguments_sha256"], newest);
    assert!(records.len() < 13, "{}", records.len());
    let _ = home.warden(&["stop"]);
}

fn sha256_hex(text: &str) -> String {
    use std::io::Write as _;
    let mut child =
        std::process::Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    stdout(&output).split_whitespace().next().unwrap().to_string()
}

/// POSTs a 2026-07-28 `tools/call` (no session needed) to the front.
fn front_call(port: u16, token: &str, tool: &str, arguments: Value) -> Value {
    use std::io::{Read as _, Write as _};
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments, "_meta": meta}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap_or_default().trim()).unwrap_or(Value::Null)
}

#[test]
fn a_front_call_is_recorded_with_the_name_of_the_token_it_came_with_never_the_token() {
    let home = home("audit-front", 10.0);
    let (named, unnamed) = ("front-token-named-0123456789", "front-token-plain-0123456789");
    let mut config = std::fs::read_to_string(&home.config).unwrap();
    config += &format!(
        "[front]\nlisten = \"127.0.0.1:0\"\n\
         tokens = [{{ token = \"{named}\", name = \"ci\" }}, {{ token = \"{unnamed}\" }}]\n"
    );
    std::fs::write(&home.config, config).unwrap();
    let status = home.warden(&["status", "--json"]);
    assert!(status.status.success(), "{}", common::stderr(&status));
    let port = common::bound_port(&status, "front");
    for token in [named, unnamed] {
        let answer = front_call(port, token, "test__echo", json!({"message": "hi"}));
        assert_eq!(answer["result"]["content"][0]["text"], "hi", "{answer}");
    }
    let records = audit_when(&home, &[], |records| records.len() >= 2);
    let via: Vec<&str> = records.iter().map(|record| record["via"].as_str().unwrap()).collect();
    assert_eq!(via, ["front: token 'ci' at /mcp, every server", "front: token #2 at /mcp, every server"]);
    let text = std::fs::read_to_string(home.dir.join("audit.jsonl")).unwrap();
    assert!(!text.contains(named) && !text.contains(unnamed), "a token is in the audit log:\n{text}");
    let _ = home.warden(&["stop"]);
}
