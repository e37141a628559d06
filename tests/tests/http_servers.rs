//! Warden against a real MCP server over Streamable HTTP: the pinned
//! `@modelcontextprotocol/server-everything` in its `streamableHttp` mode,
//! started by the test on a free loopback port. Real time, real processes.

use std::time::Duration;

use serde_json::json;
use warden_actors::{ServerState, Warden};

mod common;
use common::join_all;
use warden_tests::http_everything::{free_port, HttpEverything};
use warden_tests::test_config;

/// Warden started on `toml` (auto-approval on), once its servers settled
/// (within `patience` seconds).
async fn settled(toml: &str, patience: u64) -> Warden {
    let config = test_config(toml).expect("valid config");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(patience), warden.settled()).await.expect("the server settles");
    warden
}

#[tokio::test]
async fn server_everything_over_http_lists_and_calls_tools() {
    let server = HttpEverything::start().await;
    let toml = format!(
        "[servers.remote]\nurl = {:?}\nheaders = {{ X-Test = \"warden\" }}\nstartup_timeout_secs = 60\n",
        server.url
    );
    let warden = settled(&toml, 60).await;
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(status.server_info.as_ref().unwrap().name, "mcp-servers/everything");

    let (wrappers, own): (Vec<_>, Vec<_>) =
        warden.tools().into_iter().partition(|entry| entry.primitive_tool.is_some());
    let names =
        |entries: Vec<warden_actors::ToolEntry>| entries.into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    assert_eq!(
        names(own),
        [
            "remote__echo",
            "remote__get-annotated-message",
            "remote__get-env",
            "remote__get-resource-links",
            "remote__get-resource-reference",
            "remote__get-structured-content",
            "remote__get-sum",
            "remote__get-tiny-image",
            "remote__gzip-file-as-resource",
            // Registered when the server is initialised: listed because
            // `tools/list` waits until `notifications/initialized` was
            // accepted (its list_changed goes to the GET stream, which
            // Warden opens only after that notification).
            "remote__simulate-research-query",
            "remote__toggle-simulated-logging",
            "remote__toggle-subscriber-updates",
            "remote__trigger-long-running-operation",
        ]
    );
    assert_eq!(
        names(wrappers),
        ["remote__get_prompt", "remote__list_prompts", "remote__list_resources", "remote__read_resource"]
    );

    let echo = warden.call_tool("remote__echo", json!({"message": "hello"})).await.unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    // Many calls at once, each its own POST.
    let calls = &warden;
    let sums = (0..16)
        .map(|n| async move { calls.call_tool("remote__get-sum", json!({"a": n, "b": 1})).await.unwrap().text() })
        .collect();
    let sums = join_all(sums).await;
    for (n, text) in sums.iter().enumerate() {
        assert_eq!(text, &format!("The sum of {n} and 1 is {}.", n + 1));
    }

    warden.shutdown().await;
    server.stop().await;
}

#[tokio::test]
async fn an_http_server_that_is_not_there_fails_with_what_happened() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let toml = format!("[servers.remote]\nurl = {url:?}\n");
    let warden = settled(&toml, 30).await;
    let status = &warden.status()[0];
    let ServerState::Failed { reason } = &status.state else { panic!("the server failed: {status:?}") };
    assert!(reason.contains(&format!("could not reach {url}: ")), "{reason}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_restarted_http_server_gets_a_new_session_without_the_caller_noticing() {
    let server = HttpEverything::start().await;
    let port: u16 = server.url.rsplit(':').next().unwrap().trim_end_matches("/mcp").parse().unwrap();
    let toml = format!("[servers.remote]\nurl = {:?}\nstartup_timeout_secs = 60\n", server.url);
    let warden = settled(&toml, 60).await;
    let echo = warden.call_tool("remote__echo", json!({"message": "before"})).await.unwrap();
    assert_eq!(echo.text(), "Echo: before");
    let tools_before = warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>();

    // A restart forgets every session: the next call is refused with 400
    // "No valid session ID", and Warden initialises again and retries it.
    server.stop().await;
    let server = HttpEverything::start_on(port).await;
    let echo = warden.call_tool("remote__echo", json!({"message": "after"})).await.unwrap();
    assert_eq!(echo.text(), "Echo: after");
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status:?}");
    // The tools were listed again on the new session: the same ones.
    assert_eq!(warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>(), tools_before);

    warden.shutdown().await;
    server.stop().await;
}

#[tokio::test]
async fn server_everything_sends_its_log_messages_on_the_get_stream() {
    use std::sync::Arc;
    use warden_protocol::{Connector, HttpConnector, HttpSpec, Message, RequestId, TransportEvent};

    let server = HttpEverything::start().await;
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let sink = Arc::new(move |event| {
        let _ = tx.send(event);
    });
    let connection = HttpConnector::new(HttpSpec::new("remote", server.url.clone())).connect(sink).await.unwrap();
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    connection.send(Message::request(RequestId::Number(1), "initialize", Some(params))).unwrap();
    connection.send(Message::notification("notifications/initialized", None)).unwrap();
    let call = json!({"name": "toggle-simulated-logging", "arguments": {}});
    connection.send(Message::request(RequestId::Number(2), "tools/call", Some(call))).unwrap();
    // One message right away (lost if the GET stream was not open yet),
    // then one every 5 s, none of them part of a request's stream.
    let log = async {
        loop {
            let events = match events.recv().await.expect("the connection is open") {
                TransportEvent::Batch(events) => events,
                event => vec![event],
            };
            for event in events {
                if let TransportEvent::Message(Message::Notification(note)) = event {
                    if note.method == "notifications/message" {
                        return note;
                    }
                }
            }
        }
    };
    let note = tokio::time::timeout(Duration::from_secs(15), log).await.expect("a log message in time");
    let data = note.params.unwrap()["data"].clone();
    assert!(data.as_str().unwrap().contains("message - SessionId "), "{data}");
    connection.close().await;
    server.stop().await;
}

#[tokio::test]
async fn server_everything_over_legacy_sse_lists_and_calls_tools() {
    let server = HttpEverything::start_sse().await;
    // No `transport`: the POST to `/sse` is refused (404) and Warden
    // falls back to the legacy transport on its own.
    let toml = format!(
        "[servers.legacy]\nurl = {:?}\nheaders = {{ X-Test = \"warden\" }}\nstartup_timeout_secs = 60\n",
        server.url
    );
    let warden = settled(&toml, 60).await;
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status:?}");
    assert_eq!(status.server_info.as_ref().unwrap().name, "mcp-servers/everything");
    let names = warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    for name in ["legacy__echo", "legacy__get-sum", "legacy__trigger-long-running-operation"] {
        assert!(names.iter().any(|listed| listed == name), "{name} in {names:?}");
    }

    let echo = warden.call_tool("legacy__echo", json!({"message": "hello"})).await.unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    // Calls at once: every answer comes on the one stream.
    let calls = &warden;
    let sums = (0..8)
        .map(|n| async move { calls.call_tool("legacy__get-sum", json!({"a": n, "b": 1})).await.unwrap().text() })
        .collect();
    for (n, text) in join_all(sums).await.iter().enumerate() {
        assert_eq!(text, &format!("The sum of {n} and 1 is {}.", n + 1));
    }

    // The stream is the connection: the server going away takes the
    // server down, and its status says why (HTTP servers are not
    // restarted).
    let mut changes = warden.tool_changes();
    server.stop().await;
    tokio::time::timeout(Duration::from_secs(30), changes.changed()).await.expect("the tools go in time");
    let status = &warden.status()[0];
    let ServerState::Failed { reason } = &status.state else { panic!("the server failed: {status:?}") };
    assert!(reason.contains("the connection closed: the event stream from"), "{reason}");
    warden.shutdown().await;
}
