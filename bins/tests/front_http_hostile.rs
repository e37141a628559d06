//! The HTTP front under a hostile or broken client (issue 19): a local
//! program that floods the listener with connections that send nothing,
//! and a client that asks for an answer stream and never reads it. Neither
//! may keep another client out, hold more than a bounded amount of the
//! daemon's memory, or lose the answer it asked for.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::front_client::{call, front_home, Http, TOKEN};
use serde_json::json;

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn eleven_hundred_silent_connections_do_not_lock_clients_out_of_the_front() {
    let (_home, port) = front_home("front-flood", false, "");
    // More than the listener holds (1,024), none sending a byte.
    let silent: Vec<TcpStream> = (0..1_100).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));

    // A client with the token gets in at once, while the silent ones are held.
    let started = Instant::now();
    let mut http = Http::connect(port);
    let session = http.initialize("/mcp", TOKEN).unwrap_or_else(|reply| panic!("{reply:?}"));
    let echo = http.post("/mcp", TOKEN, Some(&session), &call(1, "test__echo", json!({"message": "through"})));
    assert_eq!(echo.json()["result"]["content"][0]["text"], "through", "{}", echo.body);
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());

    // Every silent connection is closed: the idlest at once to make room,
    // the rest at the header deadline (10 s); none holds a place after.
    for stream in &silent {
        stream.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    }
    let mut open = 0;
    for mut stream in silent {
        // Closed: whatever the front may have said ends (EOF), or the
        // connection was reset; a read that times out finds it open.
        match stream.read_to_end(&mut Vec::new()) {
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::ConnectionReset => {}
            Err(error) => {
                eprintln!("a silent connection is still open: {error}");
                open += 1;
            }
        }
    }
    assert_eq!(open, 0, "silent connections still open after the header deadline");
    // The client that proved itself is still served on its own connection.
    let again = http.post("/mcp", TOKEN, Some(&session), &call(2, "test__echo", json!({"message": "still"})));
    assert_eq!(again.json()["result"]["content"][0]["text"], "still", "{}", again.body);
}

#[test]
fn a_client_that_never_reads_its_answer_stream_holds_only_itself() {
    let (home, port) = front_home("front-unread", false, "");
    let daemon = home.daemon_pid();
    let mut stalled = Http::connect(port);
    let session = stalled.initialize("/mcp", TOKEN).unwrap();
    let mut others = Http::connect(port);
    let other_session = others.initialize("/mcp", TOKEN).unwrap();
    let ping = json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
    assert_eq!(others.post("/mcp", TOKEN, Some(&other_session), &ping).status, 200);
    let before = rss_kib(daemon);

    // 100,000 progress events (about 17 MB of SSE), asked for and not read.
    let steps = 100_000;
    let mut request = call(7, "test__progress", json!({"steps": steps, "ms": 0}));
    request["params"]["_meta"] = json!({"progressToken": "unread"});
    let body = request.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = stalled.reader.into_inner();
    stream.write_all(head.as_bytes()).unwrap();

    // Meanwhile another session's calls are answered, each its own.
    let started = Instant::now();
    for n in 0..50 {
        let message = format!("other {n}");
        let reply =
            others.post("/mcp", TOKEN, Some(&other_session), &call(n, "test__echo", json!({"message": message})));
        assert_eq!(reply.json()["result"]["content"][0]["text"], message.as_str(), "{}", reply.body);
    }
    let others_took = started.elapsed();
    assert!(others_took < Duration::from_secs(10), "50 calls beside the stalled stream took {others_took:?}");

    // Let the server finish its steps while nobody reads: the daemon holds
    // a bounded backlog, not the stream.
    std::thread::sleep(Duration::from_secs(4));
    let grown = rss_kib(daemon).saturating_sub(before);
    assert!(grown < 16 * 1024, "the daemon grew by {grown} KiB holding an unread stream");

    // When the client reads at last, its answer is there (progress it fell
    // behind on was dropped, never the answer).
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut seen = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let answer = format!("{steps} steps");
    while !String::from_utf8_lossy(&seen[seen.len().saturating_sub(4096)..]).contains(&answer) {
        let read = stream.read(&mut chunk).expect("the stream goes on until its answer");
        assert!(
            read > 0,
            "the stream ended without its answer, after {} bytes: …{}",
            seen.len(),
            String::from_utf8_lossy(&seen[seen.len().saturating_sub(600)..])
        );
        seen.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&seen);
    let progress = text.matches("notifications/progress").count();
    assert!(progress > 0 && progress < steps, "{progress} progress events");
    eprintln!(
        "unread stream: others' 50 calls in {others_took:?}, daemon grew {grown} KiB, \
         {progress} of {steps} progress events delivered, then the answer"
    );
}
