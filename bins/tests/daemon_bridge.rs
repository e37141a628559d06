//! The bridge under bad and hostile clients: wrong tokens, malformed and
//! oversized requests, silent and trickling connections, clients that
//! leave mid-call, fifty clients at once, and a server that floods its
//! stderr. Real daemon, real TCP.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

#[test]
fn a_request_without_the_right_token_gets_an_error_and_nothing_else() {
    let home = Home::with_test_server("daemon-token", "");
    home.start_daemon();
    let (_, token) = home.connect();
    let mut wrong = token.clone();
    wrong.replace_range(..1, if token.starts_with('0') { "1" } else { "0" });
    for request in
        [json!({"op": "list_tools"}), json!({"op": "list_tools", "token": wrong}), json!({"op": "nope", "token": 5})]
    {
        let (mut connection, _) = home.connect();
        let answer = connection.ask(request.clone());
        assert_eq!(
            answer,
            json!({"ok": false, "error": {"code": "unauthorized", "message": "missing or wrong `token`; it is in the daemon's lockfile (daemon.json in Warden's state directory)"}}),
            "{request}"
        );
        assert_eq!(connection.answer(), None, "the connection is closed after");
    }
}

#[test]
fn malformed_requests_get_structured_errors_and_the_connection_stays_usable() {
    let home = Home::with_test_server("daemon-malformed", "");
    home.start_daemon();
    let (mut connection, token) = home.connect();
    let code = |answer: &Value| answer["error"]["code"].as_str().unwrap_or("").to_string();
    connection.send("{not json");
    let answer = connection.answer().unwrap();
    assert_eq!(code(&answer), "parse_error");
    assert!(answer["error"]["message"].as_str().unwrap().starts_with("the request is not JSON: key must be a string"));
    connection.writer.write_all(b"{\"op\":\"\xff\"}\n").unwrap();
    assert_eq!(
        connection.answer().unwrap()["error"],
        json!({"code": "parse_error", "message": "the request is not UTF-8 text, so not JSON"})
    );
    connection.send("[1,2]");
    assert_eq!(
        connection.answer().unwrap()["error"]["message"],
        "a request is a JSON object with an `op`, not an array"
    );
    let answer = connection.ask(json!({"op": "frobnicate", "token": token, "id": 3}));
    assert_eq!(answer["id"], 3);
    assert_eq!(code(&answer), "unknown_op");
    let answer = connection.ask(json!({"op": "get_schema", "server": 1, "tool": "add", "token": token}));
    assert_eq!(answer["error"]["message"], "op 'get_schema': invalid type: integer `1`, expected a string");
    let answer = connection.ask(json!({"op": "call_tool", "name": "test__echo", "args": [1], "token": token}));
    assert_eq!(answer["error"]["message"], "op 'call_tool': `args` must be a JSON object, not an array");
    // `reload` takes no fields; with the file unchanged it changes nothing.
    let answer = connection.ask(json!({"op": "reload", "token": token}));
    assert_eq!(answer["result"]["unchanged"], json!(["test"]), "{answer}");

    // Still usable, and the seed's ops keep their shapes.
    let answer = connection.ask(json!({"op": "ping", "token": token, "id": "p"}));
    assert_eq!(answer["ok"], true);
    assert_eq!(answer["id"], "p");
    let answer = connection.ask(json!({"op": "get_schema", "server": "test", "tool": "add", "token": token}));
    assert_eq!(answer["result"]["required"], json!(["a", "b"]));
    let answer = connection
        .ask(json!({"op": "call_tool", "server": "test", "tool": "echo", "args": {"message": "m"}, "token": token}));
    assert_eq!(answer, json!({"ok": true, "result": {"content": [{"type": "text", "text": "m"}]}}));
    let answer = connection.ask(json!({"op": "list_tools", "token": token}));
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 14);
    assert_eq!(answer["result"]["tools"][0]["name"], "test__add");
    let answer = connection.ask(json!({"op": "describe_tool", "name": "test__add", "token": token}));
    assert_eq!(answer["result"]["tool"]["annotations"]["readOnlyHint"], true);
    let answer = connection.ask(json!({"op": "get_schema", "server": "test", "tool": "nope", "token": token}));
    assert_eq!(
        answer["error"],
        json!({"code": "unknown_tool", "message": "server 'test' has no tool 'nope'; `warden tools` lists the tools available"})
    );
}

#[test]
fn a_tool_added_later_is_found_by_server_and_tool_name() {
    let home = Home::with_test_server("daemon-late-tool", "");
    home.start_daemon();
    let (mut connection, token) = home.connect();
    let late = json!({"op": "call_tool", "server": "test", "tool": "late_tool", "token": token});
    assert_eq!(connection.ask(late.clone())["error"]["code"], "unknown_tool");
    let notified = connection.ask(json!({"op": "call_tool", "server": "test", "tool": "notify", "token": token}));
    assert_eq!(notified["result"]["content"][0]["text"], "notified");
    // The server's new list is fetched in the background.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let answer = connection.ask(late.clone());
        if answer["ok"] == true || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(answer["result"]["content"][0]["text"], "late", "{answer}");
}

/// Sends `line` plus a newline from another thread (the daemon may close
/// before all of it is written) and returns the first answer and whatever
/// came after it before the connection closed.
fn send_oversized(connection: Connection, line: String) -> (Value, Vec<u8>) {
    let Connection { mut reader, mut writer, .. } = connection;
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(line.as_bytes());
        let _ = writer.write_all(b"\n");
    });
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    sender.join().unwrap();
    (answer, rest)
}

#[test]
fn an_oversized_request_is_refused_and_its_connection_closed() {
    let home = Home::with_test_server("daemon-oversized", "");
    home.start_daemon();
    let huge = |token: &str, bytes: usize| {
        let mut line = format!(r#"{{"op":"call_tool","name":"test__echo","token":"{token}","args":{{"message":""#);
        line.push_str(&"x".repeat(bytes));
        line.push_str("\"}}");
        line
    };
    // Proven by a ping, a connection may send up to 16 MiB.
    let (mut connection, token) = home.connect();
    assert_eq!(connection.ask(json!({"op": "ping", "token": token}))["ok"], true);
    let (answer, rest) = send_oversized(connection, huge(&token, 16 * 1024 * 1024));
    assert_eq!(answer["error"]["code"], "too_large");
    assert_eq!(answer["error"]["message"], "the request is longer than 16777216 bytes; the connection is closed");
    assert!(rest.is_empty());

    // A first line is held to 1 MiB: the daemon does not buffer 16 MiB for
    // whoever connects, token or not.
    let (connection, token) = home.connect();
    let (answer, rest) = send_oversized(connection, huge(&token, 1024 * 1024));
    assert_eq!(answer["error"]["code"], "too_large");
    assert_eq!(
        answer["error"]["message"],
        "the first request on a connection may be at most 1048576 bytes (send a `ping` with the token first); the \
         connection is closed"
    );
    assert!(rest.is_empty());

    // Other connections are unaffected, and the CLI proves itself before a
    // large first call.
    let (mut connection, token) = home.connect();
    assert_eq!(connection.ask(json!({"op": "ping", "token": token}))["ok"], true);
    let message = "y".repeat(1536 * 1024);
    let mut call = home.command(&["call", "test__echo", "-", "--config"]);
    let child = call.arg(&home.config).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let mut child = child.stderr(std::process::Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(json!({"message": message}).to_string().as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Echoed, then cut at the output limit for printing.
    assert!(stdout(&output).starts_with(&message[..90 * 1024]), "{}", &stdout(&output)[..100]);
}

#[test]
fn six_hundred_silent_connections_do_not_lock_clients_out() {
    let home = Home::with_test_server("daemon-flood", "");
    home.start_daemon();
    let address = home.lockfile().unwrap()["address"].as_str().unwrap().to_string();
    let silent: Vec<TcpStream> = (0..600).map(|_| TcpStream::connect(&address).unwrap()).collect();
    // Clients with the token get in at once, while the silent ones are held.
    let started = Instant::now();
    let output = home.warden(&["call", "test__echo", r#"{"message":"through"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "through\n");
    let (mut connection, token) = home.connect();
    assert_eq!(connection.ask(json!({"op": "ping", "token": token}))["ok"], true);
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());

    // The oldest silent ones were closed to make room, the newest within
    // five seconds, told why; none of them holds anything any more.
    let mut closed_silently = 0;
    let mut told = 0;
    for stream in &silent {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    for stream in silent {
        let mut text = String::new();
        let read = BufReader::new(stream).read_to_string(&mut text);
        assert!(read.is_ok(), "every silent connection is closed within the deadline: {read:?}");
        if text.is_empty() {
            closed_silently += 1;
        } else {
            let answer: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                answer["error"],
                json!({"code": "unauthorized", "message": "no request with the `token` within 5 s of connecting; the connection is closed"})
            );
            told += 1;
        }
    }
    assert!(closed_silently >= 600 - 64, "{closed_silently} evicted");
    assert!(told >= 1, "the newest wait out their deadline");
    let status = connection.ask(json!({"op": "status", "token": token}));
    assert_eq!(status["result"]["daemon"]["connections"], 1, "{status}");
}

#[test]
fn a_stranger_trickling_a_line_and_an_idle_client_are_disconnected() {
    let home = Home::with_test_server("daemon-slow", "[daemon]\nconnection_idle_secs = 1\n");
    home.start_daemon();
    // A byte a second never makes a first line within the deadline.
    let (connection, _) = home.connect();
    let Connection { mut reader, mut writer, .. } = connection;
    let started = Instant::now();
    let trickle = std::thread::spawn(move || {
        for byte in b"{\"op\":\"ping\",\"token\":\"".iter().cycle().take(20) {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    assert!(answer.contains("no request with the `token` within 5 s"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(7), "closed after {:?}", started.elapsed());
    trickle.join().unwrap();

    // A proven client that says nothing for a second is closed; one with a
    // call running is not.
    let (mut idle, token) = home.connect();
    assert_eq!(idle.ask(json!({"op": "ping", "token": token}))["ok"], true);
    let (mut busy, _) = home.connect();
    let sleep = json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 2500}, "token": token});
    busy.send(&sleep.to_string());
    let started = Instant::now();
    assert_eq!(idle.answer(), None, "the idle connection is closed");
    assert!(started.elapsed() < Duration::from_secs(3), "closed after {:?}", started.elapsed());
    assert_eq!(busy.answer().unwrap()["result"]["content"][0]["text"], "slept 2500 ms");
}

#[test]
fn a_client_that_disconnects_mid_call_does_not_disturb_other_calls() {
    let home = Home::with_test_server("daemon-disconnect", "");
    home.start_daemon();
    let (mut leaver, token) = home.connect();
    leaver.send(&json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 1500}, "token": token}).to_string());
    let (mut stayer, _) = home.connect();
    stayer.send(
        &json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 1000}, "token": token, "id": 1}).to_string(),
    );
    std::thread::sleep(Duration::from_millis(200));
    drop(leaver);
    stayer.send(
        &json!({"op": "call_tool", "name": "test__echo", "args": {"message": "still here"}, "token": token, "id": 2})
            .to_string(),
    );
    let first = stayer.answer().unwrap();
    assert_eq!(first["id"], 1);
    assert_eq!(first["result"]["content"][0]["text"], "slept 1000 ms");
    let second = stayer.answer().unwrap();
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"]["content"][0]["text"], "still here");

    // The abandoned call ran to its end; the daemon is fine.
    std::thread::sleep(Duration::from_millis(800));
    let status = stayer.ask(json!({"op": "status", "token": token}));
    assert_eq!(status["result"]["daemon"]["calls_in_flight"], 0);
    assert_eq!(status["result"]["servers"][0]["state"], "running");
}

#[test]
fn fifty_clients_making_a_hundred_calls_each_get_their_own_answers() {
    let home = Home::with_test_server("daemon-fifty", "");
    home.start_daemon();
    let clients: Vec<_> = (0..50)
        .map(|client| {
            let (mut connection, token) = home.connect();
            std::thread::spawn(move || {
                // Ten at a time in flight on each connection.
                for batch in 0..10 {
                    for call in 0..10 {
                        let n = batch * 10 + call;
                        let message = format!("client {client} call {n}");
                        let request = json!({"op": "call_tool", "server": "test", "tool": "echo", "args": {"message": message}, "token": token, "id": n});
                        connection.send(&request.to_string());
                    }
                    for call in 0..10 {
                        let n = batch * 10 + call;
                        let answer = connection.answer().expect("an answer");
                        assert_eq!(answer["id"], n);
                        assert_eq!(answer["result"]["content"][0]["text"], format!("client {client} call {n}"));
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("every answer matched its request");
    }
}

#[test]
fn a_server_flooding_stderr_leaves_a_bounded_summarised_log() {
    let home = Home::with_test_server("daemon-log-flood", "[daemon]\nlog_max_mb = 0.01\nlog_files = 2\n");
    home.start_daemon();
    let started = Instant::now();
    let output = home.warden(&["call", "test__stderr", r#"{"lines":300000}"#]);
    assert_eq!(stdout(&output), "wrote 300000 lines\n", "{}", stderr(&output));
    let logs = || -> Vec<(String, String)> {
        ["daemon.log", "daemon.log.1", "daemon.log.2", "daemon.log.3"]
            .iter()
            .filter_map(|name| Some((name.to_string(), std::fs::read_to_string(home.dir.join(name)).ok()?)))
            .collect()
    };
    // The lines past the budget are summed up when the 10 s window closes.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !logs().iter().any(|(_, text)| text.contains("more lines from 'test' in the last 10 s were not logged")) {
        assert!(Instant::now() < deadline, "no summary line after {:?}: {:?}", started.elapsed(), logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    let logs = logs();
    let names: Vec<&str> = logs.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.starts_with(&["daemon.log", "daemon.log.1"]), "rotated: {names:?}");
    assert!(!names.contains(&"daemon.log.3"), "at most two old files are kept: {names:?}");
    for (name, text) in &logs {
        assert!(text.len() <= 10 * 1024 + 1024, "{name} is {} bytes", text.len());
        assert_eq!(mode(&home.dir.join(name)), 0o600, "{name}");
    }
    let all: String = logs.iter().map(|(_, text)| text.as_str()).collect();
    assert!(all.contains("stderr line 1 "), "the first lines are logged");
    assert!(!all.contains("stderr line 299999"), "the flood is not");
    // The daemon goes on serving, logging to the newest file.
    let output = home.warden(&["call", "test__echo", r#"{"message":"after"}"#]);
    assert_eq!(stdout(&output), "after\n");
}

#[test]
fn list_tools_for_an_agent_answers_what_its_model_is_handed() {
    let home = Home::with_test_server(
        "bridge-presented",
        "\n[[agents]]\nname = \"coder\"\nallowed_tools = [\"test__echo\", \"test__pid\"]\n\
         [tool_profiles.lean]\ndefault = \"brief\"\n",
    );
    home.start_daemon();
    let (mut connection, token) = home.connect();
    let answer = connection.ask(json!({"op": "list_tools", "token": token, "agent": "coder", "profile": "lean"}));
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["result"]["presented"], true);
    let names: Vec<&str> =
        answer["result"]["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["test__echo", "test__pid", "describe_tool"], "the agent's tools, then describe_tool");
    // Without them, the listing as before: every tool with its server.
    let answer = connection.ask(json!({"op": "list_tools", "token": token}));
    assert!(answer["result"]["tools"].as_array().unwrap().len() > 2);
    assert_eq!(answer["result"]["tools"][0]["server"], "test");
    // An unknown agent or profile is named.
    let answer = connection.ask(json!({"op": "list_tools", "token": token, "agent": "nobody"}));
    assert_eq!(answer["error"]["code"], "unknown_agent", "{answer}");
    let answer = connection.ask(json!({"op": "list_tools", "token": token, "profile": "tiny"}));
    assert_eq!(answer["ok"], false, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("tiny"), "{answer}");
}

#[test]
fn a_deferring_profile_lists_find_tools_and_the_daemon_finds_through_its_index() {
    let home = Home::with_test_server(
        "bridge-find",
        "\n[[agents]]\nname = \"coder\"\nallowed_tools = [\"test__*\"]\nprofile = \"lean\"\n\
         [tool_profiles.lean]\ndefault = \"deferred\"\ntools = { \"test__echo\" = \"full\" }\n",
    );
    home.start_daemon();
    let (mut connection, token) = home.connect();
    let answer = connection.ask(json!({"op": "list_tools", "token": token, "agent": "coder"}));
    let names: Vec<&str> =
        answer["result"]["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["test__echo", "describe_tool", "find_tools", "call_tool"], "{answer}");
    let answer =
        connection.ask(json!({"op": "find_tools", "token": token, "query": "sum of two numbers", "agent": "coder"}));
    assert_eq!(answer["result"]["tools"][0]["name"], "test__add", "{answer}");
    assert!(answer["result"]["tools"][0]["reason"].as_str().unwrap().starts_with("matched "), "{answer}");
    // `warden find` asks the daemon.
    let text =
        String::from_utf8_lossy(&home.warden(&["find", "sum of two numbers", "--limit", "1"]).stdout).to_string();
    assert!(text.starts_with("test__add  "), "{text}");
}
